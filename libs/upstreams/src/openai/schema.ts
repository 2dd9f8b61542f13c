import { z } from 'zod';
import type { ChatChunk, ChatCompletion, ChatUsage, EmbeddingResult } from '../types';
import { UpstreamError } from '../upstream-error';
import { parsed, tokenCount, usageOrNone } from '../answer-schema';

/**
 * The OpenAI wire shapes the gateway reads, checked where they arrive. Objects are loose: fields the gateway does
 * not read (logprobs, system_fingerprint, reasoning deltas...) pass through to the client as they always have.
 * Usage is checked on its own (usageOrNone): a malformed figure is dropped and counted instead, never a failure.
 */

/**
 * The details are parts of the totals (cached and cache-written tokens of prompt_tokens, reasoning tokens of
 * completion_tokens): parts larger than their total are a broken figure, billed as any malformed usage is.
 */
export const chatUsage = z
  .looseObject({
    prompt_tokens: tokenCount,
    completion_tokens: tokenCount,
    total_tokens: tokenCount.optional(),
    prompt_tokens_details: z.looseObject({ cached_tokens: tokenCount.nullish(), cache_write_tokens: tokenCount.nullish() }).nullish(),
    completion_tokens_details: z.looseObject({ reasoning_tokens: tokenCount.nullish() }).nullish(),
  })
  .refine((u) => (u.prompt_tokens_details?.cached_tokens ?? 0) + (u.prompt_tokens_details?.cache_write_tokens ?? 0) <= u.prompt_tokens, {
    message: 'cached prompt tokens exceed the prompt tokens',
    path: ['prompt_tokens_details'],
  })
  .refine((u) => (u.completion_tokens_details?.reasoning_tokens ?? 0) <= u.completion_tokens, {
    message: 'reasoning tokens exceed the completion tokens',
    path: ['completion_tokens_details'],
  });

const text = z.string().nullish();
const finishReason = z.string().nullish();

const toolCall = z.looseObject({
  id: z.string(),
  type: z.string().optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const completion = z.looseObject({
  created: z.number().int().nonnegative().optional(),
  choices: z.array(
    z.looseObject({
      index: z.number().int().nonnegative().optional(),
      message: z.looseObject({ role: z.string().optional(), content: text, refusal: text, tool_calls: z.array(toolCall).nullish() }),
      finish_reason: finishReason,
    }),
  ),
  usage: z.unknown().optional(),
});

const toolCallDelta = z.looseObject({
  index: z.number().int().nonnegative(),
  id: z.string().optional(),
  function: z.looseObject({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
});

const chunk = z.looseObject({
  created: z.number().int().nonnegative().optional(),
  choices: z.array(
    z.looseObject({
      index: z.number().int().nonnegative().optional(),
      // A closing chunk without a delta says as little as one with an empty delta.
      delta: z.looseObject({ role: z.string().optional(), content: text, refusal: text, tool_calls: z.array(toolCallDelta).nullish() }).default({}),
      finish_reason: finishReason,
    }),
  ),
  usage: z.unknown().optional(),
});

/** A frame some servers send mid-stream instead of an HTTP status: `{error: {message}}`. */
const streamError = z.object({ error: z.union([z.looseObject({ message: z.string().optional() }), z.string()]) });

const embeddingsUsage = z.looseObject({ prompt_tokens: tokenCount });

/** A chat completion; its usage only when well formed (see usageOrNone). */
export function readCompletion(json: unknown, onMalformedUsage: (issue: string) => void): ChatCompletion {
  const answer = parsed(completion, json, 'chat completion');
  const usage = usageOrNone(chatUsage, answer.usage, onMalformedUsage);
  const { usage: _raw, ...rest } = answer;
  return { ...(rest as unknown as ChatCompletion), ...(usage ? { usage: usage as ChatUsage } : {}) };
}

/** One stream frame's JSON as a chunk; an error frame is the stream breaking. */
export function readChunk(data: string, onMalformedUsage: (issue: string) => void): ChatChunk {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new UpstreamError('protocol', 'upstream sent a malformed stream frame');
  }
  // Looked for before the schema is asked: a failed parse builds an error, which every ordinary chunk would pay for.
  if ((json as { error?: unknown } | null)?.error != null) {
    const failed = streamError.safeParse(json);
    const e = failed.success ? failed.data.error : undefined;
    const message = typeof e === 'string' ? e : (e?.message ?? 'unknown');
    throw new UpstreamError('broken_stream', `upstream stream error: ${message.slice(0, 500)}`);
  }
  const c = parsed(chunk, json, 'stream chunk');
  const usage = usageOrNone(chatUsage, c.usage, onMalformedUsage);
  // A malformed figure must not ride along on the chunk either: chunks with choices reach the client as they are.
  const { usage: _raw, ...rest } = c;
  return { ...(rest as unknown as ChatChunk), ...(usage ? { usage: usage as ChatUsage } : {}) };
}

/** The embeddings answer's reported tokens, when well formed; the vectors are checked by readEmbeddings. */
export function embeddingsUsageOf(json: unknown, onMalformedUsage: (issue: string) => void): EmbeddingResult['usage'] {
  const usage = usageOrNone(embeddingsUsage, (json as { usage?: unknown } | null)?.usage, onMalformedUsage);
  return usage ? { prompt_tokens: usage.prompt_tokens } : undefined;
}
