import crypto from 'node:crypto';
import type { TranscriptFormat, TranscriptionProtocol, TranscriptionRequest } from '../types';
import { TRANSCRIPT_CONTENT_TYPE } from '../mime';
import { verboseTranscript } from './verbose-transcript';

/**
 * A sentence seeded by the audio's bytes, in the format asked for. No duration is reported to the gateway, as some
 * real upstreams report none: the route must measure the upload itself, and the demo exercises that path.
 * `verbose_json` carries OpenAI's timeline (verbose-transcript.ts), laid on the gateway's own measure.
 */
export const simulatedTranscribe: TranscriptionProtocol['transcribe'] = async (ep, req) => {
  const digest = crypto.createHash('sha256').update(req.audio).digest('hex').slice(0, 8);
  const text = `This is a simulated transcription by ${ep.upstreamModel} (${digest}) of ${req.audio.length} bytes of audio.`;
  return { contentType: TRANSCRIPT_CONTENT_TYPE[req.responseFormat], body: render(req.responseFormat, text, req) };
};

/** The one cue spans the first second: a made-up span, but the subtitle formats need one. */
function render(format: TranscriptFormat, text: string, req: TranscriptionRequest): string {
  switch (format) {
    case 'json':
      return JSON.stringify({ text });
    case 'verbose_json':
      return JSON.stringify(verboseTranscript(text, req));
    case 'text':
      return `${text}\n`;
    case 'srt':
      return `1\n00:00:00,000 --> 00:00:01,000\n${text}\n\n`;
    case 'vtt':
      return `WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n${text}\n\n`;
  }
}
