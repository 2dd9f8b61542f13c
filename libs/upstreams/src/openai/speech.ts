import type { SpeechProtocol } from '../types';
import { UpstreamError, classify } from '../upstream-error';
import { headerOf, type JsonPost } from '../http';
import { SPEECH_CONTENT_TYPE } from '../mime';

/**
 * POST {base_url}/audio/speech. Resolves on the upstream's 2xx head and hands the body on as it arrives, so the
 * client hears the start while the rest is still being made.
 */
export function openAISpeech(post: JsonPost): SpeechProtocol['speech'] {
  return async (ep, req, opts) => {
    const res = await post(
      ep,
      '/audio/speech',
      { model: ep.upstreamModel, input: req.input, voice: req.voice, response_format: req.responseFormat, speed: req.speed },
      opts,
      '*/*',
    );
    const upstreamType = headerOf(res, 'content-type');
    // A 2xx in JSON is an error report in the wrong status, not audio: the next endpoint may take over.
    if (upstreamType && /^application\/(?:problem\+)?json\b/i.test(upstreamType)) {
      await res.body.dump().catch(() => undefined);
      throw new UpstreamError('protocol', 'upstream answered JSON instead of audio');
    }
    // Servers that say only application/octet-stream are told apart by the format that was asked for.
    const contentType = upstreamType && /^audio\//i.test(upstreamType) ? upstreamType : SPEECH_CONTENT_TYPE[req.responseFormat];
    return { contentType, body: relay(res.body) };
  };
}

/** The body's chunks in order; a break mid-stream surfaces as an UpstreamError (broken_stream). */
async function* relay(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  try {
    yield* body;
  } catch (e) {
    throw classify(e);
  }
}
