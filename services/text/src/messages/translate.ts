import type { ErrorCode } from '@gateway/errors';
import type { ChatCall, ChatOutcome } from '../chat-flow/run-chat';
import type { MessagesBody } from './schema';

type ChatMessage = ChatCall['body']['messages'][number] & Record<string, unknown>;
type UserBlock = Extract<MessagesBody['messages'][number], { role: 'user' }>['content'] extends string | Array<infer B> ? B : never;
type AssistantBlock = Extract<MessagesBody['messages'][number], { role: 'assistant' }>['content'] extends string | Array<infer B> ? B : never;

/** The message id is the request id under the message API's prefix: strip `msg_` for GET /v1/generation. */
export function messageId(requestId: string): string {
  return `msg_${requestId}`;
}

function joinText(blocks: Array<{ type: string; text?: string }>, separator: string): string {
  return blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join(separator);
}

/**
 * A prompt-caching breakpoint rides on the chat part or tool it marks (the shape OpenRouter's chat API takes too), so
 * a message-API upstream gets it back where the client put it (anthropic/request.ts in @gateway/upstreams).
 */
function cacheControlOf(b: object): { cache_control?: unknown } {
  const c = (b as { cache_control?: unknown }).cache_control;
  return c === undefined ? {} : { cache_control: c };
}

/** Tool answers become `tool` turns ahead of the rest of the user turn: chat upstreams want them right after the call. */
function userTurns(content: string | UserBlock[]): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const out: ChatMessage[] = [];
  const parts: Array<Record<string, unknown>> = [];
  for (const b of content) {
    if (b.type === 'tool_result') {
      const text = typeof b.content === 'string' ? b.content : joinText(b.content ?? [], '\n');
      out.push({ role: 'tool', tool_call_id: b.tool_use_id, content: text });
    } else if (b.type === 'text') {
      parts.push({ type: 'text', text: b.text, ...cacheControlOf(b) });
    } else {
      const url = b.source.type === 'base64' ? `data:${b.source.media_type};base64,${b.source.data}` : b.source.url;
      parts.push({ type: 'image_url', image_url: { url }, ...cacheControlOf(b) });
    }
  }
  if (parts.length === 1 && parts[0].type === 'text' && parts[0].cache_control === undefined)
    out.push({ role: 'user', content: parts[0].text as string });
  else if (parts.length > 0) out.push({ role: 'user', content: parts });
  return out;
}

function assistantTurn(content: string | AssistantBlock[]): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const calls = content
    .filter((b): b is Extract<AssistantBlock, { type: 'tool_use' }> => b.type === 'tool_use')
    .map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } }));
  const text = joinText(content, '');
  return { role: 'assistant', content: text || (calls.length ? null : ''), ...(calls.length ? { tool_calls: calls } : {}) };
}

function toolChoiceOf(choice: NonNullable<MessagesBody['tool_choice']>): unknown {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
  }
}

/** A validated message-API body as the chat call every text upstream understands. */
export function toChatBody(body: MessagesBody): ChatCall['body'] {
  const messages: ChatMessage[] = [];
  // System blocks with a caching breakpoint stay parts; otherwise one text, as chat upstreams read it best.
  if (Array.isArray(body.system) && body.system.some((b) => b.cache_control !== undefined)) {
    messages.push({ role: 'system', content: body.system.map((b) => ({ type: 'text', text: b.text, ...cacheControlOf(b) })) });
  } else {
    const system = typeof body.system === 'string' ? body.system : joinText(body.system ?? [], '\n');
    if (system) messages.push({ role: 'system', content: system });
  }
  for (const m of body.messages) {
    if (m.role === 'user') messages.push(...userTurns(m.content));
    else messages.push(assistantTurn(m.content));
  }
  const tools = body.tools?.length ? body.tools : undefined;
  const noParallel = tools && body.tool_choice && 'disable_parallel_tool_use' in body.tool_choice && body.tool_choice.disable_parallel_tool_use;
  return {
    messages,
    max_tokens: body.max_tokens,
    ...(body.stop_sequences?.length ? { stop: body.stop_sequences } : {}),
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
    ...(body.top_p !== undefined ? { top_p: body.top_p } : {}),
    ...(body.top_k !== undefined ? { top_k: body.top_k } : {}),
    ...(body.metadata?.user_id ? { user: body.metadata.user_id } : {}),
    ...(tools
      ? {
          tools: tools.map((t) => ({
            type: 'function',
            function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.input_schema },
            ...cacheControlOf(t),
          })),
        }
      : {}),
    ...(tools && body.tool_choice ? { tool_choice: toolChoiceOf(body.tool_choice) } : {}),
    ...(noParallel ? { parallel_tool_calls: false } : {}),
  };
}

/** Chat finish reasons in the message API's words; `stop_sequence` only when the upstream said which one. */
export function stopReasonOf(finishReason: string | null | undefined, stopSequence?: string | null): string {
  switch (finishReason) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return stopSequence ? 'stop_sequence' : 'end_turn';
  }
}

/** Tool arguments are JSON text in the chat shape and an object in the message API; junk becomes `{}`. */
function toolInputOf(args: unknown): Record<string, unknown> {
  try {
    const input = JSON.parse(typeof args === 'string' && args ? args : '{}');
    return input !== null && typeof input === 'object' && !Array.isArray(input) ? input : {};
  } catch {
    return {};
  }
}

interface ToolCall {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** Upstreams that omit tool call ids still need one the client can answer with. */
export function toolUseId(id: string | undefined, requestId: string, index: number): string {
  return id || `toolu_${requestId}_${index}`;
}

export interface MessagesUsage {
  /** As the message API counts it: the prompt tokens neither read from nor written to the cache. */
  input_tokens: number;
  output_tokens: number;
  /** Present when the upstream used its prompt cache. */
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
  /** Addition: the exact charge, a decimal string, as on chat completions. */
  cost: string;
}

export function usageOf(u: ChatOutcome['usage']): MessagesUsage {
  const read = u.prompt_tokens_details?.cached_tokens ?? 0;
  const write = u.prompt_tokens_details?.cache_write_tokens ?? 0;
  return {
    input_tokens: u.prompt_tokens - read - write,
    output_tokens: u.completion_tokens,
    ...(read || write ? { cache_read_input_tokens: read, cache_creation_input_tokens: write } : {}),
    cost: u.cost,
  };
}

/** A settled chat outcome in the message API's shape, under the gateway's id and slug. */
export function toMessage(outcome: ChatOutcome) {
  const choice = outcome.completion.choices[0];
  const text = typeof choice?.message?.content === 'string' ? choice.message.content : '';
  const calls = (choice?.message?.tool_calls as ToolCall[] | undefined) ?? [];
  const content: Array<Record<string, unknown>> = text || calls.length === 0 ? [{ type: 'text', text }] : [];
  for (const [i, c] of calls.entries()) {
    content.push({
      type: 'tool_use',
      id: toolUseId(c.id, outcome.requestId, i),
      name: c.function?.name ?? '',
      input: toolInputOf(c.function?.arguments),
    });
  }
  const stopSequence = typeof choice?.stop_sequence === 'string' ? choice.stop_sequence : null;
  const stopReason = stopReasonOf(choice?.finish_reason, stopSequence);
  return {
    id: messageId(outcome.requestId),
    type: 'message',
    role: 'assistant',
    model: outcome.model.config.id,
    content,
    stop_reason: stopReason,
    stop_sequence: stopReason === 'stop_sequence' ? stopSequence : null,
    usage: usageOf(outcome.usage),
  };
}

const ERROR_TYPES: Record<ErrorCode, string> = {
  invalid_request: 'invalid_request_error',
  invalid_api_key: 'authentication_error',
  insufficient_credits: 'billing_error',
  not_found: 'not_found_error',
  model_unavailable: 'not_found_error',
  canceled: 'api_error',
  duplicate_request: 'invalid_request_error',
  gone: 'not_found_error',
  rate_limited: 'rate_limit_error',
  upstream_unavailable: 'api_error',
};

/** The message API's error `type` for a gateway error code, for the in-stream error event. */
export function errorTypeOf(code: ErrorCode): string {
  return ERROR_TYPES[code];
}
