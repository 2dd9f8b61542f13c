import { spendControlFields } from '@gateway/config';
import { z } from 'zod';

/** The containers whose duration the gateway can measure before the call (music-metadata reads them all). */
export const AUDIO_FORMATS = ['wav', 'mp3', 'ogg', 'flac', 'm4a', 'webm'] as const;
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

const format = z
  .string()
  .transform((s) => s.trim().toLowerCase())
  .pipe(z.enum(AUDIO_FORMATS, `must be one of ${AUDIO_FORMATS.join(', ')}`));

/** What both body forms carry beside the recording. */
const options = {
  model: z.string().min(1),
  language: z
    .string()
    .regex(/^[a-z]{2}$/, 'must be an ISO-639-1 code: two lowercase letters')
    .optional(),
  response_format: z.enum(['json', 'text', 'srt', 'verbose_json', 'vtt']).default('json'),
  timestamp_granularities: z.array(z.enum(['word', 'segment'])).optional(),
  /** Additions, never forwarded: OpenRouter's provider preferences (JSON body only: a form field is no object), max_cost (either form). */
  ...spendControlFields,
};

const granularitiesNeedVerbose = {
  path: ['timestamp_granularities'],
  message: 'is accepted only with response_format verbose_json (the other formats carry no timestamps)',
};
const granularitiesFit = (b: { timestamp_granularities?: unknown; response_format: string }) =>
  b.timestamp_granularities === undefined || b.response_format === 'verbose_json';

/**
 * POST /v1/audio/transcriptions, the contract's JSON body (the recording base64 in input_audio).
 * Unknown fields are dropped: every provider kind takes this fixed shape.
 */
export const transcriptionBody = z
  .object({
    ...options,
    input_audio: z.object({
      /** Base64, bare or as a data: URL; decoded and checked by audio-data.ts. */
      data: z.string().min(1, 'must not be empty'),
      format,
    }),
  })
  .refine(granularitiesFit, granularitiesNeedVerbose);

export type TranscriptionBody = z.infer<typeof transcriptionBody>;

/**
 * The same request as a multipart upload (OpenAI's own form, which its clients send): the recording is the `file`
 * part, its container named by the file's extension, else its media type (upload-fields.ts). Unknown fields
 * (`prompt`, `temperature`...) are dropped, as in the JSON form.
 */
export const transcriptionUpload = z
  .object({
    ...options,
    file: z.object(
      {
        data: z.instanceof(Buffer).refine((b) => b.length > 0, 'must not be empty'),
        format,
      },
      'required: the recording, as a file part named "file"',
    ),
  })
  .refine(granularitiesFit, granularitiesNeedVerbose);
