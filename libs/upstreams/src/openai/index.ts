import { Agent, request } from 'undici';
import type { ResolvedEndpoint } from '@gateway/config';
import type { CallOptions, ChatChunk, ChatCompletion, TextProtocol } from '../types';
import { UpstreamError, classify } from '../upstream-error';
import { sseData } from '../sse';

const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * OpenAI-compatible upstreams (`kind: openai`): POST {base_url}/chat/completions with undici.
 * `timeout_ms` bounds the time to the response head, which is when failover is still possible.
 */
export function createOpenAIProtocol(env: NodeJS.ProcessEnv = process.env): TextProtocol {
  const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000, connect: { timeout: 10_000 } });

  async function post(ep: ResolvedEndpoint, body: Record<string, unknown>, opts: CallOptions) {
    const timeout = ep.provider.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    const apiKey = ep.provider.api_key_env ? env[ep.provider.api_key_env] : undefined;
    let res;
    try {
      res = await request(`${ep.provider.base_url!.replace(/\/$/, '')}/chat/completions`, {
        method: 'POST',
        dispatcher: agent,
        headers: {
          'content-type': 'application/json',
          accept: body.stream ? 'text/event-stream' : 'application/json',
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
          'x-request-id': opts.requestId,
        },
        body: JSON.stringify({ ...body, model: ep.upstreamModel }),
        headersTimeout: timeout,
        // Between body chunks; a stalled stream breaks instead of hanging forever.
        bodyTimeout: Math.max(timeout, 30_000),
        signal: opts.signal,
      });
    } catch (e) {
      throw classify(e);
    }
    if (res.statusCode >= 400) {
      const text = await res.body.text().catch(() => '');
      let message = text.slice(0, 500);
      try {
        message = JSON.parse(text)?.error?.message ?? message;
      } catch {
        /* not JSON: keep the text */
      }
      throw new UpstreamError('status', `upstream answered ${res.statusCode}: ${message}`, res.statusCode);
    }
    return res;
  }

  return {
    async chat(ep, body, opts) {
      const res = await post(ep, { ...body, stream: false }, opts);
      try {
        const json = (await res.body.json()) as ChatCompletion;
        if (!json || !Array.isArray(json.choices)) throw new UpstreamError('protocol', 'upstream answer has no choices');
        return json;
      } catch (e) {
        throw e instanceof UpstreamError ? e : classify(e);
      }
    },
    async chatStream(ep, body, opts) {
      const streamOptions = { ...((body.stream_options as object) ?? {}), include_usage: true };
      const res = await post(ep, { ...body, stream: true, stream_options: streamOptions }, opts);
      return (async function* () {
        try {
          for await (const data of sseData(res.body)) {
            if (data === '[DONE]') return;
            let chunk: ChatChunk & { error?: { message?: string } };
            try {
              chunk = JSON.parse(data);
            } catch {
              throw new UpstreamError('protocol', 'upstream sent a malformed stream frame');
            }
            if (chunk.error) throw new UpstreamError('broken_stream', `upstream stream error: ${chunk.error.message ?? 'unknown'}`);
            yield chunk;
          }
          // The body ended without [DONE]: the upstream hung up mid-answer.
          throw new UpstreamError('broken_stream', 'upstream stream ended early');
        } catch (e) {
          throw classify(e);
        }
      })();
    },
  };
}
