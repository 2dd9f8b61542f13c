import { pipeline } from 'node:stream/promises';
import type { Response, Router } from 'express';
import { type Dispatcher, request } from 'undici';
import { GatewayError } from '@gateway/errors';
import { contextOf } from '@gateway/service-kit';
import type { MediaStorage } from '../storage/port';
import { parseRange } from './range';
import type { FileRef, FileRefs } from './refs';

export interface FilesDeps {
  refs: FileRefs;
  storage: MediaStorage;
  /** How long to wait for an origin's response head before answering 503. */
  originTimeoutMs?: number;
  /**
   * What origins are fetched through: the service passes a guarded agent (only the providers' base_url origins and
   * public addresses, see @gateway/upstreams origin-guard), since an origin is a URL an upstream's answer named.
   */
  originDispatcher?: Dispatcher;
}

/** The bytes of a reference change never: a client may keep them briefly, privately, and must ask again after. */
const CACHE_CONTROL = 'private, max-age=280, must-revalidate';
const ID = /^file_[a-z0-9]{24}$/;

/**
 * GET /v1/files/{id}: streams generated media at request time, never redirecting, so no upstream address reaches
 * the client. Unknown ids and other accounts' answer the same 404; an expired reference 410, for good.
 */
export function mountFiles(r: Router, deps: FilesDeps): void {
  r.get('/v1/files/:id', async (req, res) => {
    const ctx = contextOf(req);
    const id = String(req.params.id);
    const ref = ID.test(id) ? await deps.refs.find(id, ctx.accountId) : undefined;
    if (!ref) throw new GatewayError('not_found', `No file ${id}`);
    if (deps.refs.isExpired(ref) || ref.location === '') throw new GatewayError('gone', `File ${id} has expired; generate it again`);
    res.setHeader('cache-control', CACHE_CONTROL);
    res.setHeader('accept-ranges', 'bytes');
    if (ref.source === 'stored') await sendStored(res, deps.storage, ref, req.headers.range);
    else await sendFromOrigin(res, ref, req.headers.range, deps.originTimeoutMs ?? 30_000, () => req.destroyed, deps.originDispatcher);
  });
}

async function sendStored(res: Response, storage: MediaStorage, ref: FileRef, rangeHeader: string | undefined): Promise<void> {
  const size = await storage.size(ref.location);
  if (size === undefined) throw new GatewayError('gone', `File ${ref.id} is no longer stored; generate it again`);
  const range = parseRange(rangeHeader, size);
  if (range === 'unsatisfiable') {
    throw new GatewayError('invalid_request', `Range ${rangeHeader} is outside the file's ${size} bytes`, {
      status: 416,
      headers: { 'content-range': `bytes */${size}` },
    });
  }
  const span = range === 'whole' ? { start: 0, end: size - 1 } : range;
  res.status(range === 'whole' ? 200 : 206);
  res.setHeader('content-type', ref.contentType);
  res.setHeader('content-length', String(Math.max(0, span.end - span.start + 1)));
  if (range !== 'whole') res.setHeader('content-range', `bytes ${span.start}-${span.end}/${size}`);
  if (size === 0) return void res.end();
  await pipeline(await storage.read(ref.location, span.start, span.end), res);
}

/** Headers of the origin's answer that describe the bytes; nothing else (no server names, no origin URLs) passes. */
const PASSED = ['content-length', 'content-range', 'last-modified'];

async function sendFromOrigin(
  res: Response,
  ref: FileRef,
  rangeHeader: string | undefined,
  timeoutMs: number,
  clientGone: () => boolean,
  dispatcher: Dispatcher | undefined,
): Promise<void> {
  let upstream: Awaited<ReturnType<typeof request>>;
  try {
    // A refused address (not public, not a provider's) answers as an origin that did not answer: nothing about it shows.
    upstream = await request(ref.location, {
      ...(dispatcher ? { dispatcher } : {}),
      method: 'GET',
      headers: rangeHeader ? { range: rangeHeader } : {},
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      maxRedirections: 3,
    });
  } catch {
    throw new GatewayError('upstream_unavailable', `The origin of file ${ref.id} did not answer; try again shortly`);
  }
  const status = upstream.statusCode;
  if (status !== 200 && status !== 206) {
    await upstream.body.dump();
    if (status === 416) throw new GatewayError('invalid_request', `Range ${rangeHeader} is outside the file`, { status: 416 });
    // The origin dropped the bytes (URLs signed for a while, then gone): as permanent as our own expiry.
    if (status === 403 || status === 404 || status === 410)
      throw new GatewayError('gone', `File ${ref.id} is no longer available; generate it again`);
    throw new GatewayError('upstream_unavailable', `The origin of file ${ref.id} failed; try again shortly`);
  }
  res.status(status);
  res.setHeader('content-type', ref.contentType);
  for (const name of PASSED) {
    const v = upstream.headers[name];
    if (typeof v === 'string') res.setHeader(name, v);
  }
  try {
    await pipeline(upstream.body, res);
  } catch (e) {
    // A client that leaves mid-download is not an error of ours; an origin that breaks mid-body ends the response.
    if (!clientGone()) throw e;
  }
}
