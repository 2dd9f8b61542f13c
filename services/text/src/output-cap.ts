import type { ResolvedModel } from '@gateway/config';
import { outputCap } from '@gateway/pricing';
import { z } from 'zod';

/**
 * The chat fields by which a client limits the answer, as every chat-shaped route validates them. Upstreams differ
 * in which one they read (reasoning models refuse max_tokens, older servers ignore max_completion_tokens), so the
 * tightest one counts, and every one the client sent goes upstream at that same value: whichever field the upstream
 * reads, it cannot write past the hold.
 */
export const outputLimitFields = {
  max_tokens: z.number().int().positive().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
};

const LIMIT_FIELDS = Object.keys(outputLimitFields) as Array<keyof typeof outputLimitFields>;

/** The tightest output limit a chat-shaped body asks for, or undefined when it asks for none. */
export function requestedCap(body: Record<string, unknown>): number | undefined {
  let cap: number | undefined;
  for (const field of LIMIT_FIELDS) {
    const v = body[field];
    if (typeof v === 'number') cap = cap === undefined ? v : Math.min(cap, v);
  }
  return cap;
}

/**
 * A chat-shaped body as the upstream receives it: the effective cap (the one the hold is sized from, or the tighter
 * one a `max_cost` affords, `affordable`) in each limit field the client sent, or, when it sent none, in
 * max_completion_tokens: OpenAI's current field, the only one its reasoning models accept (they refuse max_tokens
 * with a 400).
 */
export function withOutputCap<B extends Record<string, unknown>>(model: ResolvedModel, body: B, affordable?: number): B {
  const held = outputCap(model, requestedCap(body));
  const cap = affordable === undefined ? held : Math.min(held, affordable);
  const out: Record<string, unknown> = { ...body };
  const sent = LIMIT_FIELDS.filter((f) => typeof body[f] === 'number');
  for (const field of sent.length ? sent : ['max_completion_tokens']) out[field] = cap;
  return out as B;
}
