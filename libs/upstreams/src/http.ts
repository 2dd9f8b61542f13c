import { Agent, type Dispatcher, type FormData } from 'undici';
import type { ResolvedEndpoint } from '@gateway/config';
import type { CallOptions } from './types';
import { UpstreamError, classify } from './upstream-error';
import { dispatchWhole, type WholeAnswer } from './whole-answer';
import { dispatchSse, type SseAnswer, type SseFrames } from './sse-answer';
import { errorMessageOf } from './error-body';

const DEFAULT_TIMEOUT_MS = 60_000;

/** Sends `payload` as is: the caller has already put the upstream model (and anything else) in it. */
export type JsonPost = (
  ep: ResolvedEndpoint,
  path: string,
  payload: Record<string, unknown>,
  opts: CallOptions,
  /** What the answer is expected to be; JSON unless said otherwise (an SSE answer is read with `sse`). */
  accept?: string,
) => Promise<Dispatcher.ResponseData>;

/** Sends `payload` as JSON and reads the whole answer, which must be JSON: for the calls that are not streamed. */
export type JsonCall = (ep: ResolvedEndpoint, path: string, payload: Record<string, unknown>, opts: CallOptions) => Promise<unknown>;

/** Sends `payload` as JSON with `stream: true` and reads the answer's SSE `data:` payloads as they arrive. */
export type SseCall = (ep: ResolvedEndpoint, path: string, payload: Record<string, unknown>, opts: CallOptions) => Promise<SseFrames>;

/** Sends a multipart/form-data body (undici writes the boundary and the content type). */
export type FormPost = (ep: ResolvedEndpoint, path: string, form: FormData, opts: CallOptions) => Promise<Dispatcher.ResponseData>;

/** One connection pool per protocol, shared by its JSON and multipart calls. */
export interface UpstreamClient {
  /** The answer as it arrives (audio). */
  json: JsonPost;
  /** The answer read whole and parsed. */
  jsonWhole: JsonCall;
  /** The answer's SSE payloads; a failure while they are read is undici's error, for `classify`. */
  sse: SseCall;
  form: FormPost;
}

export interface JsonPostOptions {
  /** How the protocol presents the key from `api_key_env`; Bearer unless said otherwise. */
  auth?: (apiKey: string) => Record<string, string>;
  /** Headers every call of the protocol carries (e.g. an API version). */
  headers?: Record<string, string>;
}

/** The headers a call adds to its provider's: what it sends and what it wants back. */
type CallHeaders = { 'content-type'?: string; accept: string };

/** What every call of one provider to one path with one kind of body sends alike, worked out once (see fixedOf). */
interface Fixed {
  apiKey: string | undefined;
  origin: string;
  path: string;
  /** Flat name/value pairs, as undici takes them: no object to copy and walk on every call. */
  headers: string[];
  headersTimeout: number;
  bodyTimeout: number;
}

/**
 * POST to `{base_url}{path}` with the key from `api_key_env`. Shared by every HTTP protocol (openai/, anthropic/,
 * cohere/), so they pool connections and classify failures alike. `timeout_ms` bounds the time to the response
 * head, which is when failover is still possible. A 4xx or 5xx is thrown as an UpstreamError of the status and the
 * upstream's own reason, never the URL: a client fault's message reaches the client.
 */
export function createUpstreamClient(options: JsonPostOptions = {}, env: NodeJS.ProcessEnv = process.env): UpstreamClient {
  const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000, connect: { timeout: 10_000 } });
  const auth = options.auth ?? ((key: string) => ({ authorization: `Bearer ${key}` }));

  const fixed = new WeakMap<ResolvedEndpoint['provider'], Map<string, Fixed>>();

  /**
   * The URL, headers and timeouts of a call, which until 2026-11-27 were built on every call (a regular expression
   * on the base URL, a string and a lookup for the target, four object spreads for the headers): about 1.5 % of the
   * embedded gateway's request thread. The key is read from the environment on every call, as before, so a key
   * set after start-up is used from the next call.
   */
  const fixedOf = (ep: ResolvedEndpoint, path: string, headers: CallHeaders): Fixed => {
    const provider = ep.provider;
    const apiKey = provider.api_key_env ? env[provider.api_key_env] : undefined;
    let byPath = fixed.get(provider);
    if (!byPath) {
      byPath = new Map();
      fixed.set(provider, byPath);
    }
    // The call's own headers are all that differ between calls of one provider to one path.
    const cacheKey = `${headers['content-type'] ?? ''} ${headers.accept} ${path}`;
    const known = byPath.get(cacheKey);
    if (known && known.apiKey === apiKey) return known;
    // The config schema requires base_url for every HTTP kind; should one slip through, fail over like a dead host.
    if (!provider.base_url) throw new UpstreamError('connect', `provider ${provider.id} has no base_url`);
    const timeout = provider.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    const merged = { ...headers, ...options.headers, ...(apiKey ? auth(apiKey) : {}) };
    const url = new URL(`${provider.base_url.replace(/\/$/, '')}${path}`);
    const made: Fixed = {
      apiKey,
      // undici's request(url) would parse the URL on every call, a visible share of the request thread under load.
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      headers: Object.entries(merged).flat(),
      headersTimeout: timeout,
      // Between body chunks; a stalled stream breaks instead of hanging forever.
      bodyTimeout: Math.max(timeout, 30_000),
    };
    byPath.set(cacheKey, made);
    return made;
  };

  const requestOf = (ep: ResolvedEndpoint, path: string, body: string | FormData, headers: CallHeaders, opts: CallOptions) => {
    const f = fixedOf(ep, path, headers);
    return {
      origin: f.origin,
      path: f.path,
      method: 'POST' as const,
      headers: f.headers.concat('x-request-id', opts.requestId),
      body,
      headersTimeout: f.headersTimeout,
      bodyTimeout: f.bodyTimeout,
    };
  };

  const send = async (request: ReturnType<typeof requestOf>, signal: AbortSignal | undefined) => {
    let res: Dispatcher.ResponseData;
    try {
      res = await agent.request({ ...request, signal });
    } catch (e) {
      throw classify(e);
    }
    if (res.statusCode >= 400) {
      const text = await res.body.text().catch(() => '');
      throw statusError(res.statusCode, text);
    }
    return res;
  };

  const jsonHeaders = (accept: string): CallHeaders => ({ 'content-type': 'application/json', accept });
  const WHOLE_JSON = jsonHeaders('application/json');
  const SSE = jsonHeaders('text/event-stream');
  // undici writes the multipart content type, with its boundary, itself.
  const FORM: CallHeaders = { accept: '*/*' };

  return {
    json: (ep, path, payload, opts, accept) => {
      return send(requestOf(ep, path, JSON.stringify(payload), accept ? jsonHeaders(accept) : WHOLE_JSON, opts), opts.signal);
    },
    jsonWhole: async (ep, path, payload, opts) => {
      const request = requestOf(ep, path, JSON.stringify(payload), WHOLE_JSON, opts);
      let answer: WholeAnswer;
      try {
        answer = await dispatchWhole(agent, request, opts.signal);
      } catch (e) {
        throw classify(e);
      }
      if (answer.statusCode >= 400) throw statusError(answer.statusCode, answer.text);
      return parseAnswer(answer.text);
    },
    sse: async (ep, path, payload, opts) => {
      const request = requestOf(ep, path, JSON.stringify(payload), SSE, opts);
      let answer: SseAnswer;
      try {
        answer = await dispatchSse(agent, request, opts.signal);
      } catch (e) {
        throw classify(e);
      }
      if ('frames' in answer) return answer.frames;
      throw statusError(answer.statusCode, answer.text);
    },
    form: (ep, path, form, opts) => send(requestOf(ep, path, form, FORM, opts), opts.signal),
  };
}

/** The whole answer as text; a connection that breaks while it is read fails over like any other. */
export async function readText(res: Dispatcher.ResponseData): Promise<string> {
  try {
    return await res.body.text();
  } catch (e) {
    throw classify(e);
  }
}

/** An answer that is not JSON is the upstream's fault, so the next endpoint may take over. */
function parseAnswer(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError('protocol', 'upstream answer is not JSON');
  }
}

function statusError(status: number, text: string): UpstreamError {
  return new UpstreamError('status', `upstream answered ${status}: ${errorMessageOf(text)}`, status);
}

/** A response header's (first) value. */
export function headerOf(res: Dispatcher.ResponseData, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
