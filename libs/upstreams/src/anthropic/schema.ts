import { z } from 'zod';
import { MAX_REPORTED_TOKENS, parsed, tokenCount, usageOrNone } from '../answer-schema';
import type { MessagesAnswer, MessagesUsage } from './wire';

/**
 * The message API's answers and stream events as the gateway reads them, checked where they arrive. Objects are
 * loose (fields added later pass), kinds the gateway does not translate (thinking, server tools, new events) are
 * taken as they are. Usage is checked on its own: a malformed figure is dropped and counted instead (usageOrNone).
 */

/** Cached prompt tokens are prompt tokens too, so their sum is what must fit the ledger. */
export const messagesUsage = z
  .looseObject({
    input_tokens: tokenCount,
    output_tokens: tokenCount,
    cache_creation_input_tokens: tokenCount.nullish(),
    cache_read_input_tokens: tokenCount.nullish(),
  })
  .refine((u) => u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) <= MAX_REPORTED_TOKENS, {
    message: 'prompt tokens beyond any context window',
  });

const textBlock = z.looseObject({ type: z.literal('text'), text: z.string() });
const toolUseBlock = z.looseObject({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown().optional() });
const otherBlock = z.looseObject({ type: z.string().refine((t) => t !== 'text' && t !== 'tool_use') });

const answer = z.looseObject({
  id: z.string(),
  type: z.literal('message'),
  model: z.string(),
  content: z.array(z.union([textBlock, toolUseBlock, otherBlock])),
  stop_reason: z.string().nullish(),
  stop_sequence: z.string().nullish(),
  usage: z.unknown().optional(),
});

/** A whole answer; its usage only when well formed. */
export function readMessagesAnswer(json: unknown, onMalformedUsage: (issue: string) => void): MessagesAnswer {
  const a = parsed(answer, json, 'message');
  const usage = usageOrNone(messagesUsage, a.usage, onMalformedUsage);
  return { ...(a as unknown as MessagesAnswer), usage };
}

/** The figures message_delta updates: any subset, each replacing the earlier one; judged whole at message_stop. */
const usageUpdate = z.record(z.string(), z.unknown()).nullish();

const EVENTS = {
  message_start: z.looseObject({
    type: z.literal('message_start'),
    message: z.looseObject({ id: z.string(), model: z.string(), usage: usageUpdate }),
  }),
  content_block_start: z.looseObject({
    type: z.literal('content_block_start'),
    index: z.number().int().nonnegative(),
    content_block: z.union([toolUseBlock, z.looseObject({ type: z.string().refine((t) => t !== 'tool_use') })]),
  }),
  content_block_delta: z.looseObject({
    type: z.literal('content_block_delta'),
    index: z.number().int().nonnegative(),
    delta: z.looseObject({ type: z.string(), text: z.string().optional(), thinking: z.string().optional(), partial_json: z.string().optional() }),
  }),
  message_delta: z.looseObject({
    type: z.literal('message_delta'),
    delta: z.looseObject({ stop_reason: z.string().nullish(), stop_sequence: z.string().nullish() }),
    usage: usageUpdate,
  }),
  message_stop: z.looseObject({ type: z.literal('message_stop') }),
  // Whatever its shape, an error event breaks the stream; its words are read only when they are words.
  error: z.looseObject({
    type: z.literal('error'),
    error: z.looseObject({ type: z.unknown().optional(), message: z.unknown().optional() }).catch({ type: undefined, message: undefined }),
  }),
};

type Events = { [K in keyof typeof EVENTS]: z.infer<(typeof EVENTS)[K]> };
export type StreamEvent = Events[keyof Events];

const eventType = z.looseObject({ type: z.string() });

/** One event's payload; undefined for kinds that carry nothing the chat shape needs (ping, content_block_stop, new ones). */
export function readStreamEvent(json: unknown): StreamEvent | undefined {
  const { type } = parsed(eventType, json, 'stream event');
  const schema = (EVENTS as Record<string, z.ZodType<StreamEvent>>)[type];
  return schema ? parsed(schema, json, `${type} event`) : undefined;
}

/** The usage gathered over a stream, when it adds up to a well-formed figure; none gathered is none reported. */
export function streamUsageOf(gathered: Record<string, unknown>, onMalformedUsage: (issue: string) => void): MessagesUsage | undefined {
  return Object.keys(gathered).length ? usageOrNone(messagesUsage, gathered, onMalformedUsage) : undefined;
}
