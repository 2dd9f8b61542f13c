import { DEFAULT_OUTPUT_CAP } from '@gateway/pricing';
import { UpstreamError } from '../upstream-error';
import type { Block, CacheControl, MessagesRequest, TextBlock, ToolChoice, Turn } from './wire';

/**
 * The message API insists on max_tokens; a chat call may leave it out. Then the model's max_output_tokens is sent
 * (it is what the hold reserved), and only without one the default the hold was sized from (DEFAULT_OUTPUT_CAP).
 * A limit the call gives never goes past the model's: the hold covers no more.
 */

interface ChatToolCall {
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
}

/** A request this upstream cannot express is the client's to fix, never a reason to fail over and trip circuits. */
function refuse(message: string): never {
  throw new UpstreamError('status', message, 400);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('');
}

function imageBlock(url: string): Block {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return data ? { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } } : { type: 'image', source: { type: 'url', url } };
}

/** A prompt-caching breakpoint on a chat part or tool, passed on unchanged: the message API is where it means something. */
function cacheControlOf(part: unknown): { cache_control?: CacheControl } {
  const c = (part as { cache_control?: unknown } | null)?.cache_control;
  return c !== null && typeof c === 'object' && !Array.isArray(c) ? { cache_control: c as CacheControl } : {};
}

function userBlocks(content: unknown): Block[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) return [];
  return content.map((part): Block => {
    if (part?.type === 'text') return { type: 'text', text: String(part.text ?? ''), ...cacheControlOf(part) };
    if (part?.type === 'image_url') return { ...imageBlock(String(part.image_url?.url ?? '')), ...cacheControlOf(part) } as Block;
    return refuse(`this model does not take "${part?.type}" content`);
  });
}

/**
 * The system prompt: plain text, unless a part carries a caching breakpoint, which only the block form can hold.
 */
function systemOf(messages: ChatMessage[]): string | TextBlock[] | undefined {
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer');
  const parts = system.flatMap((m) => (Array.isArray(m.content) ? (m.content as unknown[]) : [{ type: 'text', text: textOf(m.content) }]));
  if (parts.some((p) => cacheControlOf(p).cache_control)) {
    return parts
      .filter(
        (p): p is { type: 'text'; text: string } => (p as { type?: string })?.type === 'text' && typeof (p as { text?: unknown }).text === 'string',
      )
      .filter((p) => p.text !== '')
      .map((p) => ({ type: 'text', text: p.text, ...cacheControlOf(p) }));
  }
  const text = system.map((m) => textOf(m.content)).join('\n');
  return text || undefined;
}

function parseArguments(args: string | undefined): unknown {
  try {
    const input = JSON.parse(args || '{}');
    return input !== null && typeof input === 'object' && !Array.isArray(input) ? input : {};
  } catch {
    return {};
  }
}

function assistantBlocks(m: ChatMessage): Block[] {
  const text = textOf(m.content);
  const blocks: Block[] = text ? [{ type: 'text', text }] : [];
  for (const call of m.tool_calls ?? []) {
    blocks.push({ type: 'tool_use', id: call.id ?? '', name: call.function?.name ?? '', input: parseArguments(call.function?.arguments) });
  }
  return blocks;
}

/** Tool answers ride in the next user turn, and same-role neighbours merge: the message API alternates roles. */
function turnsOf(messages: ChatMessage[]): Turn[] {
  const turns: Array<{ role: Turn['role']; content: Block[] }> = [];
  const push = (role: Turn['role'], blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'developer') continue;
    if (m.role === 'user') push('user', userBlocks(m.content));
    else if (m.role === 'assistant') push('assistant', assistantBlocks(m));
    else if (m.role === 'tool') push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content: textOf(m.content) }]);
    else refuse(`this model does not take "${m.role}" messages`);
  }
  // A lone text block reads better, and is what most clients send, as a plain string.
  // A caching breakpoint needs the block, so a block that carries one stays a block.
  return turns.map((t) => {
    const only = t.content.length === 1 ? t.content[0] : undefined;
    return only?.type === 'text' && !only.cache_control ? { role: t.role, content: only.text } : t;
  });
}

function toolChoiceOf(choice: unknown, parallel: unknown): ToolChoice | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any', ...noParallel };
  const named = (choice as { function?: { name?: string } } | undefined)?.function?.name;
  if (named) return { type: 'tool', name: named, ...noParallel };
  if (choice === 'auto' || parallel === false) return { type: 'auto', ...noParallel };
  return undefined;
}

/**
 * A chat-completions body as the message API wants it. Only fields with a meaning there are carried: the message
 * API refuses unknown fields, so the chat route's pass-through fields stop here.
 */
export function toMessagesRequest(body: Record<string, unknown>, upstreamModel: string, maxOutputTokens?: number): MessagesRequest {
  const messages = (body.messages as ChatMessage[] | undefined) ?? [];
  const system = systemOf(messages);
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? (body.stop as string[]) : undefined;
  const tools = Array.isArray(body.tools)
    ? (body.tools as Array<{ type?: string; function?: { name: string; description?: string; parameters?: unknown } }>).flatMap((tool) =>
        tool.type === 'function' && tool.function
          ? [
              {
                name: tool.function.name,
                ...(tool.function.description ? { description: tool.function.description } : {}),
                input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
                ...cacheControlOf(tool),
              },
            ]
          : [],
      )
    : undefined;
  const toolChoice = tools?.length ? toolChoiceOf(body.tool_choice, body.parallel_tool_calls) : undefined;
  const limits = [body.max_tokens, body.max_completion_tokens, maxOutputTokens].filter((v): v is number => typeof v === 'number');
  const maxTokens = limits.length ? Math.min(...limits) : DEFAULT_OUTPUT_CAP;
  return {
    model: upstreamModel,
    messages: turnsOf(messages),
    max_tokens: maxTokens,
    ...(system ? { system } : {}),
    ...(stop?.length ? { stop_sequences: stop } : {}),
    ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}),
    ...(typeof body.top_p === 'number' ? { top_p: body.top_p } : {}),
    ...(typeof body.top_k === 'number' ? { top_k: body.top_k } : {}),
    ...(typeof body.user === 'string' ? { metadata: { user_id: body.user } } : {}),
    ...(tools?.length ? { tools } : {}),
    ...(toolChoice ? { tool_choice: toolChoice } : {}),
    stream: body.stream === true,
  };
}
