import { Blob } from 'node:buffer';
import { FormData } from 'undici';
import type { TranscriptionProtocol, TranscriptionRequest } from '../types';
import { UpstreamError } from '../upstream-error';
import { headerOf, readText, type FormPost } from '../http';
import { audioUpload, TRANSCRIPT_CONTENT_TYPE } from '../mime';

/** POST {base_url}/audio/transcriptions as multipart/form-data, the only body OpenAI's endpoint takes. */
export function openAITranscribe(post: FormPost): TranscriptionProtocol['transcribe'] {
  return async (ep, req, opts) => {
    const res = await post(ep, '/audio/transcriptions', transcriptionForm(ep.upstreamModel, req), opts);
    const body = await readText(res);
    const contentType = headerOf(res, 'content-type') ?? TRANSCRIPT_CONTENT_TYPE[req.responseFormat];
    if (req.responseFormat !== 'json' && req.responseFormat !== 'verbose_json') return { contentType, body };
    const durationSeconds = reportedDuration(body);
    return { contentType, body, ...(durationSeconds !== undefined ? { durationSeconds } : {}) };
  };
}

function transcriptionForm(model: string, req: TranscriptionRequest): FormData {
  const form = new FormData();
  const { fileName, contentType } = audioUpload(req.format);
  form.append('file', new Blob([req.audio], { type: contentType }), fileName);
  form.append('model', model);
  if (req.language !== undefined) form.append('language', req.language);
  form.append('response_format', req.responseFormat);
  for (const g of req.timestampGranularities ?? []) form.append('timestamp_granularities[]', g);
  return form;
}

/**
 * verbose_json carries `duration`; OpenAI's plain json carries `usage: {type: 'duration', seconds}`. A JSON format
 * answered with something that is not a JSON object is the upstream's fault, and fails over before anyone is charged.
 */
function reportedDuration(body: string): number | undefined {
  let json: { duration?: unknown; usage?: { seconds?: unknown } } | undefined;
  try {
    json = JSON.parse(body);
  } catch {
    /* judged below */
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new UpstreamError('protocol', 'upstream transcript is not a JSON object');
  const seconds = typeof json.duration === 'number' ? json.duration : json.usage?.seconds;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}
