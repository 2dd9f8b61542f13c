import type { Request, Response } from 'express';
import { MAX_RECORDED_ANSWER_BYTES, type ReplayClaim, type ReplayFinish, type ReplayPort } from '@gateway/billing-client';
import { GatewayError } from '@gateway/errors';
import { contextOf, type Logger, onClientGone, type PostRoutes, type RouteHandler } from '@gateway/service-kit';
import { requestFingerprint } from './fingerprint';

/** The headers a replay repeats: what the client read from the first answer besides its body and request id. */
const KEPT_HEADERS = ['content-type', 'x-gateway-cost'];

export interface ReplayDeps {
  replays: ReplayPort;
  logger: Logger;
  /** A running call's claim on its key lasts as long as its hold may stay open (limits.hold_ttl). */
  holdTtlMs?: number;
}

/**
 * Routes whose keyed calls are never run twice: a call with an Idempotency-Key is claimed in billing's replay record
 * before its route runs (so before any hold), and its 2xx answer is kept before it goes out. A retry of a finished
 * non-streamed call gets that answer again, request id included, and nothing is held or charged; a retry of a
 * finished stream is refused (409), as is the key sent with another route or body. A call that failed drops its
 * claim: its retry runs. Keyless calls pass straight through.
 */
export function replayable(routes: PostRoutes, deps: ReplayDeps): PostRoutes {
  return { post: (path: string, handler: RouteHandler) => routes.post(path, (req, res) => keyed(deps, req, res, handler)) };
}

async function keyed(deps: ReplayDeps, req: Request, res: Response, handler: RouteHandler): Promise<void> {
  // Keyless calls (nearly all) pass on before any context is built: the handler builds its own.
  if (!req.headers['idempotency-key']) return handler(req, res);
  const ctx = contextOf(req);
  if (!ctx.idempotencyKey) return handler(req, res);
  const key = { accountId: ctx.accountId, idempotencyKey: ctx.idempotencyKey, requestId: ctx.requestId };
  const claim = await deps.replays.claimReplay({
    ...key,
    fingerprint: requestFingerprint(`${req.method} ${req.path}`, req.body),
    leaseMs: deps.holdTtlMs ?? 15 * 60_000,
  });
  if (claim.kind === 'replay') return sendRecorded(res, claim);
  if (claim.kind === 'finished') {
    throw new GatewayError(
      'duplicate_request',
      `This Idempotency-Key's request finished as generation ${claim.requestId}; ${
        claim.streamed ? 'a stream is not replayed' : 'its answer was too large to keep'
      }. Read it with GET /v1/generation?id=${claim.requestId}, or send a new key`,
    );
  }
  const streamed = (req.body as { stream?: unknown } | undefined)?.stream === true;
  if (streamed) keepStreamOutcome(deps, res, key);
  else keepAnswer(deps, res, key);
  return handler(req, res);
}

function sendRecorded(res: Response, claim: Extract<ReplayClaim, { kind: 'replay' }>): void {
  res.statusCode = claim.answer.status;
  for (const [name, value] of Object.entries(claim.answer.headers)) res.setHeader(name, value);
  res.setHeader('x-gateway-request-id', claim.requestId);
  // As Stripe marks its replays: the client can tell, without comparing bodies, that nothing ran this time.
  res.setHeader('idempotent-replayed', 'true');
  res.setHeader('content-length', Buffer.byteLength(claim.answer.body));
  res.end(claim.answer.body);
}

type Key = Pick<ReplayFinish, 'accountId' | 'idempotencyKey' | 'requestId'>;

const succeeded = (res: Response) => res.statusCode >= 200 && res.statusCode < 300;

/**
 * Holds the answer's end until it is kept (or, for a failure, until the claim is dropped): once the client can
 * have read it, a retry must find it. A record that cannot be written is logged, and the answer still goes out.
 */
function keepAnswer(deps: ReplayDeps, res: Response, key: Key): void {
  const chunks: Buffer[] = [];
  const collect = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
  };
  const write = res.write.bind(res) as (...a: unknown[]) => boolean;
  const end = res.end.bind(res) as (...a: unknown[]) => Response;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    collect(chunk, rest[0]);
    return write(chunk, ...rest);
  }) as Response['write'];
  res.end = ((...args: unknown[]) => {
    collect(args[0], args[1]);
    res.end = end as Response['end'];
    const body = Buffer.concat(chunks);
    const headers: Record<string, string> = {};
    for (const name of KEPT_HEADERS) {
      const v = res.getHeader(name);
      if (v !== undefined) headers[name] = String(v);
    }
    const kept = succeeded(res)
      ? deps.replays.finishReplay({
          ...key,
          streamed: false,
          answer: body.length <= MAX_RECORDED_ANSWER_BYTES ? { status: res.statusCode, headers, body: body.toString('utf8') } : undefined,
        })
      : deps.replays.dropReplay(key);
    kept
      .catch((err: unknown) => deps.logger.error({ err, requestId: key.requestId }, 'the replay record of a keyed call was not written'))
      .finally(() => end(...args));
    return res;
  }) as Response['end'];
}

/** A stream is not replayed: once it has answered 2xx, a retry is refused; one that failed first frees its key. */
function keepStreamOutcome(deps: ReplayDeps, res: Response, key: Key): void {
  let told = false;
  const ended = () => {
    if (told) return;
    told = true;
    unwatch();
    const outcome = res.headersSent && succeeded(res) ? deps.replays.finishReplay({ ...key, streamed: true }) : deps.replays.dropReplay(key);
    outcome.catch((err: unknown) => deps.logger.error({ err, requestId: key.requestId }, 'the replay record of a keyed stream was not written'));
  };
  // Finished, or its client gone: a response's own close never comes for a pipelined one whose socket died.
  const unwatch = onClientGone(res, ended);
  res.once('finish', ended);
}
