import { Agent, request, type Dispatcher } from 'undici';
import type { ResolvedEndpoint } from '@gateway/config';
import type { QueueTicket } from '../types';
import { UpstreamError, classify } from '../upstream-error';

const DEFAULT_TIMEOUT_MS = 60_000;

/** The URLs of one queued request: where to poll, where the output is, where to cancel. */
export interface RequestUrls {
  status: string;
  result: string;
  cancel: string;
}

export function baseOf(ep: ResolvedEndpoint): string {
  // The config schema requires base_url for kind fal; should one slip through, fail over like a dead host.
  if (!ep.provider.base_url) throw new UpstreamError('connect', `provider ${ep.provider.id} has no base_url`);
  return ep.provider.base_url.replace(/\/+$/, '');
}

const encodePath = (path: string) => path.split('/').filter(Boolean).map(encodeURIComponent).join('/');

export function submitUrl(ep: ResolvedEndpoint): string {
  return `${baseOf(ep)}/${encodePath(ep.upstreamModel)}`;
}

/**
 * fal addresses a request by its app (`owner/app`), not by the endpoint path it was submitted to:
 * `fal-ai/kling-video/v2/master/text-to-video` polls under `fal-ai/kling-video`.
 */
export function appIdOf(model: string): string {
  return model.split('/').filter(Boolean).slice(0, 2).join('/');
}

export function sameOrigin(url: string | undefined, base: string): url is string {
  if (!url) return false;
  try {
    return new URL(url).origin === new URL(base).origin;
  } catch {
    return false;
  }
}

/**
 * The ticket's own URLs where they point at base_url's origin (fal knows its routing better than we do), built
 * ones otherwise: the key goes with every call, so a URL elsewhere (a tampered answer, a moved base_url) is never used.
 */
export function requestUrls(ep: ResolvedEndpoint, ticket: QueueTicket): RequestUrls {
  const base = baseOf(ep);
  const built = `${base}/${encodePath(appIdOf(ep.upstreamModel))}/requests/${encodeURIComponent(ticket.upstreamId)}`;
  return {
    status: sameOrigin(ticket.statusUrl, base) ? ticket.statusUrl : `${built}/status`,
    result: sameOrigin(ticket.responseUrl, base) ? ticket.responseUrl : built,
    cancel: sameOrigin(ticket.cancelUrl, base) ? ticket.cancelUrl : `${built}/cancel`,
  };
}

export function withLogs(statusUrl: string): string {
  const url = new URL(statusUrl);
  url.searchParams.set('logs', '1');
  return url.toString();
}

export interface FalCall {
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  body?: Record<string, unknown>;
  signal?: AbortSignal;
  requestId?: string;
}

/** One pool per protocol instance; every call carries `Authorization: Key …` and never throws on a status. */
export function createFalClient(env: NodeJS.ProcessEnv) {
  const agent = new Agent({ connections: 128, keepAliveTimeout: 30_000, connect: { timeout: 10_000 } });
  return {
    agent,
    /** Transport failures are classified; statuses are the caller's to read, since cancel's 400 is an answer. */
    async send(ep: ResolvedEndpoint, call: FalCall): Promise<Dispatcher.ResponseData> {
      const timeout = ep.provider.timeout_ms ?? DEFAULT_TIMEOUT_MS;
      const apiKey = ep.provider.api_key_env ? env[ep.provider.api_key_env] : undefined;
      try {
        return await request(call.url, {
          method: call.method,
          dispatcher: agent,
          headers: {
            accept: 'application/json',
            ...(call.body ? { 'content-type': 'application/json' } : {}),
            ...(apiKey ? { authorization: `Key ${apiKey}` } : {}),
            ...(call.requestId ? { 'x-request-id': call.requestId } : {}),
          },
          body: call.body ? JSON.stringify(call.body) : undefined,
          headersTimeout: timeout,
          bodyTimeout: Math.max(timeout, 30_000),
          signal: call.signal,
        });
      } catch (e) {
        throw classify(e);
      }
    },
  };
}

export type FalClient = ReturnType<typeof createFalClient>;
