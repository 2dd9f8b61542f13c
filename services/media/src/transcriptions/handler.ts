import type { ProviderPreferences } from '@gateway/config';
import type { Request, RequestHandler, Router } from 'express';
import { jsonBody, contextOf, validate } from '@gateway/service-kit';
import type { TranscriptionProtocol } from '@gateway/upstreams';
import { type AudioDeps, refuseUnpricedAudio } from '../audio-models';
import { decodeAudioData } from './audio-data';
import { measureSeconds } from './duration';
import { runTranscription } from './run-transcription';
import { type AudioFormat, transcriptionBody, transcriptionUpload } from './schema';
import { bodyBytes, readUpload } from './upload';
import { uploadFields } from './upload-fields';

const ROUTE = '/v1/audio/transcriptions';

/** One transcription request, whichever form it came in. */
interface Asked {
  /** Where the recording came: named in a refusal of the audio itself. */
  field: 'input_audio' | 'file';
  model: string;
  audio: Buffer;
  format: AudioFormat;
  language?: string;
  response_format: 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt';
  timestamp_granularities?: Array<'word' | 'segment'>;
  provider?: ProviderPreferences;
  max_cost?: bigint;
}

/** The contract's JSON body, or OpenAI's multipart upload (what its clients send), read and validated alike. */
async function askedOf(req: Request, maxBytes: number): Promise<Asked> {
  if (req.is('multipart/form-data')) {
    const { file, ...rest } = validate(transcriptionUpload, uploadFields(await readUpload(req, maxBytes)));
    return { ...rest, field: 'file', audio: file.data, format: file.format };
  }
  const { input_audio, ...rest } = validate(transcriptionBody, req.body);
  return { ...rest, field: 'input_audio', audio: decodeAudioData(input_audio.data), format: input_audio.format };
}

/**
 * POST /v1/audio/transcriptions: the upstream's answer verbatim, with its content type and X-Gateway-Cost. The
 * route parses its own body, up to `maxAudioBody` (a recording in base64 outgrows the other routes' limit), so it
 * must be mounted before the router's general JSON parser. A multipart upload is left to askedOf.
 */
export function mountTranscriptions(r: Router, deps: AudioDeps<TranscriptionProtocol>, maxAudioBody: string): void {
  const json = jsonBody(maxAudioBody);
  const maxBytes = bodyBytes(maxAudioBody);
  const jsonUnlessUpload: RequestHandler = (req, res, next) => (req.is('multipart/form-data') ? next() : json(req, res, next));
  r.post(ROUTE, jsonUnlessUpload, async (req, res) => {
    const asked = await askedOf(req, maxBytes);
    refuseUnpricedAudio(deps.registry, asked.model, 'second', ROUTE);
    const measuredSeconds = await measureSeconds(asked.audio, asked.format, asked.field);
    const request = {
      audio: asked.audio,
      format: asked.format,
      language: asked.language,
      responseFormat: asked.response_format,
      timestampGranularities: asked.timestamp_granularities,
      measuredSeconds,
    };
    const { result, cost } = await runTranscription(contextOf(req), deps, {
      slug: asked.model,
      provider: asked.provider,
      maxCost: asked.max_cost,
      request,
      measuredSeconds,
    });
    res.status(200);
    res.setHeader('content-type', result.contentType);
    res.setHeader('x-gateway-cost', cost);
    // end(), not send(): send would add a charset to the upstream's content type, and the answer is verbatim.
    res.end(result.body);
  });
}
