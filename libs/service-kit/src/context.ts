import crypto from 'node:crypto';
import type { Request } from 'express';
import { z } from 'zod';
import { internalApi } from '@gateway/billing-client';
import { GatewayError } from '@gateway/errors';
import { validate } from './validate';

/**
 * Headers the edge sets on requests it forwards. The edge strips any client-sent `x-gateway-*` header first,
 * so a service can trust these; in the fleet the shared internal token proves the request came from inside.
 */
export const INTERNAL = {
  requestId: 'x-gateway-request-id',
  accountId: 'x-gateway-account-id',
  keyId: 'x-gateway-key-id',
  token: 'x-gateway-internal-token',
  startedAt: 'x-gateway-started-at',
  /**
   * The caller's verified API key, set only for a service the table marks `actsForCaller` (mcp), which calls the
   * gateway's public routes on the caller's behalf; every other service never sees a key.
   */
  apiKey: 'x-gateway-api-key',
  /**
   * The account's request meter as `<requests>/<intervalMs>`: the edge counts one hit per HTTP request, and a
   * service whose one request carries several calls (an MCP batch) counts the rest against the same limit.
   */
  rateLimit: 'x-gateway-rate-limit',
} as const;

export interface RequestContext {
  requestId: string;
  accountId: string;
  keyId: string;
  /** epoch ms when the edge received the request, for latency figures. */
  startedAt: number;
  idempotencyKey?: string;
  /** The path the client called, for messages that name the route (a model of another category). */
  route?: string;
}

const ALPHABET = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz', 'latin1');
const ID_CHARS = 24;

// Random bytes are drawn 4 KiB at a time: one crypto.randomBytes call per id cost 4 % of the embedded gateway's
// busy time under load (a syscall into the CSPRNG each); from the pool, ids stay as unguessable and cost nothing.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;
/** `<prefix>_` and room for the random part, per prefix: an id is written here and read out as one flat string. */
const scratch = new Map<string, Buffer>();

/**
 * `req_` + 24 random base-36 characters: unguessable, URL-safe, cheap. Built as bytes and decoded once, because 24
 * string appends make 24 strings (and a rope the first hash flattens into a 25th); the embedded ledger keeps the
 * last 15-20 s of request ids (FinishedRequests), so the one flat string is also what it holds.
 */
export function newRequestId(prefix = 'req'): string {
  if (poolAt + ID_CHARS > pool.length) {
    pool = crypto.randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  let out = scratch.get(prefix);
  if (!out) {
    out = Buffer.from(`${prefix}_${'0'.repeat(ID_CHARS)}`, 'latin1');
    scratch.set(prefix, out);
  }
  const at = prefix.length + 1;
  for (let i = 0; i < ID_CHARS; i++) out[at + i] = ALPHABET[pool[poolAt + i] % 36];
  poolAt += ID_CHARS;
  return out.toString('latin1');
}

export function contextOf(req: Request): RequestContext {
  const h = req.headers;
  const accountId = h[INTERNAL.accountId];
  const keyId = h[INTERNAL.keyId];
  if (typeof accountId !== 'string' || typeof keyId !== 'string') {
    throw new GatewayError('invalid_api_key', 'Missing API key');
  }
  return {
    requestId: String(h[INTERNAL.requestId] ?? newRequestId()),
    accountId,
    keyId,
    startedAt: Number(h[INTERNAL.startedAt] ?? Date.now()),
    idempotencyKey: idempotencyKeyOf(req),
    route: req.path,
  };
}

const idempotencyHeader = z.object({ 'Idempotency-Key': internalApi.idempotencyKey });

/**
 * The Idempotency-Key, checked here, once, for every route in both run modes: each handler reads its context before
 * it holds or stores anything, so a key outside the rule is a 400 that changed nothing. An empty one is none.
 */
function idempotencyKeyOf(req: Request): string | undefined {
  const idem = req.headers['idempotency-key'];
  if (idem === undefined || idem === '') return undefined;
  return validate(idempotencyHeader, { 'Idempotency-Key': idem })['Idempotency-Key'];
}
