import { z } from 'zod';

/** The containers whose duration the gateway can measure before the call (music-metadata reads them all). */
export const AUDIO_FORMATS = ['wav', 'mp3', 'ogg', 'flac', 'm4a', 'webm'] as const;
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

const format = z
  .string()
  .transform((s) => s.trim().toLowerCase())
  .pipe(z.enum(AUDIO_FORMATS, `must be one of ${AUDIO_FORMATS.join(', ')}`));

/**
 * POST /v1/audio/transcriptions, a JSON body by the contract (the recording base64 in input_audio), never multipart.
 * Unknown fields are dropped: every provider kind takes this fixed shape.
 */
export const transcriptionBody = z
  .object({
    model: z.string().min(1),
    input_audio: z.object({
      /** Base64, bare or as a data: URL; decoded and checked by audio-data.ts. */
      data: z.string().min(1, 'must not be empty'),
      format,
    }),
    language: z
      .string()
      .regex(/^[a-z]{2}$/, 'must be an ISO-639-1 code: two lowercase letters')
      .optional(),
    response_format: z.enum(['json', 'text', 'srt', 'verbose_json', 'vtt']).default('json'),
    timestamp_granularities: z.array(z.enum(['word', 'segment'])).optional(),
  })
  .refine((b) => b.timestamp_granularities === undefined || b.response_format === 'verbose_json', {
    path: ['timestamp_granularities'],
    message: 'is accepted only with response_format verbose_json (the other formats carry no timestamps)',
  });

export type TranscriptionBody = z.infer<typeof transcriptionBody>;
