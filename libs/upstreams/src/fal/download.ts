import { request, type Dispatcher } from 'undici';
import type { ResolvedEndpoint } from '@gateway/config';
import { UpstreamError, classify } from '../upstream-error';

/** Generated videos run to hundreds of MB; past this the file is refused rather than held in memory. */
export const MAX_DOWNLOAD_BYTES = 1024 ** 3;
const DEFAULT_TIMEOUT_MS = 60_000;
const MAX_REDIRECTS = 3;

export interface DownloadOptions {
  agent: Dispatcher;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  maxBytes?: number;
}

/**
 * GETs a media file a result links to. fal's files sit on a public CDN, so the key goes only to base_url's own
 * origin (a fake or a proxy serving files itself), never to a host the upstream's answer named.
 */
export async function download(ep: ResolvedEndpoint, url: string, opts: DownloadOptions): Promise<{ bytes: Buffer; contentType: string }> {
  const maxBytes = opts.maxBytes ?? MAX_DOWNLOAD_BYTES;
  const base = ep.provider.base_url ? new URL(ep.provider.base_url) : undefined;
  const apiKey = ep.provider.api_key_env ? opts.env[ep.provider.api_key_env] : undefined;
  const timeout = ep.provider.timeout_ms ?? DEFAULT_TIMEOUT_MS;

  let res: Dispatcher.ResponseData;
  let target = httpUrl(url);
  for (let hop = 0; ; hop++) {
    try {
      res = await request(target, {
        method: 'GET',
        dispatcher: opts.agent,
        headers: apiKey && base?.origin === target.origin ? { authorization: `Key ${apiKey}` } : {},
        headersTimeout: timeout,
        bodyTimeout: Math.max(timeout, 30_000),
        signal: opts.signal,
      });
    } catch (e) {
      throw classify(e);
    }
    const location = res.headers.location;
    if (res.statusCode < 300 || res.statusCode >= 400 || typeof location !== 'string' || hop >= MAX_REDIRECTS) break;
    // CDNs hand files off to storage; each hop is checked again, and the key follows only to base_url's origin.
    await res.body.dump().catch(() => undefined);
    target = httpUrl(location, target);
  }
  if (res.statusCode >= 300) {
    await res.body.dump().catch(() => undefined);
    throw new UpstreamError('status', `upstream file answered ${res.statusCode}`, res.statusCode, false);
  }
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.body.destroy();
    throw new UpstreamError('protocol', `upstream file is ${declared} bytes, over the ${maxBytes}-byte limit`);
  }
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > maxBytes) {
        res.body.destroy();
        throw new UpstreamError('protocol', `upstream file is over the ${maxBytes}-byte limit`);
      }
      parts.push(chunk);
    }
  } catch (e) {
    throw classify(e);
  }
  const type = res.headers['content-type'];
  const contentType = (Array.isArray(type) ? type[0] : type)?.split(';')[0].trim() || 'application/octet-stream';
  return { bytes: Buffer.concat(parts), contentType };
}

function httpUrl(url: string, base?: URL): URL {
  let target: URL;
  try {
    target = new URL(url, base);
  } catch {
    throw new UpstreamError('protocol', 'upstream linked a file by a malformed URL');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new UpstreamError('protocol', `upstream linked a file by a ${target.protocol.replace(/:$/, '')} URL; only http(s) is fetched`);
  }
  return target;
}
