import type { ChatCompletion } from '@gateway/upstreams';
import type { ChatUsageFigures } from '../chat-flow/run-chat';
import type { ResponseEcho } from './translate-request';

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export type MessagePart = { type: 'output_text'; text: string; annotations: never[] } | { type: 'refusal'; refusal: string };

export interface MessageItem {
  type: 'message';
  id: string;
  status: ItemStatus;
  role: 'assistant';
  content: MessagePart[];
}

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: ItemStatus;
}

export type OutputItem = MessageItem | FunctionCallItem;

export interface ResponseUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  /** Of input_tokens, read from the upstream's prompt cache; of output_tokens, reasoning (0 when not reported). */
  input_tokens_details: { cached_tokens: number };
  output_tokens_details: { reasoning_tokens: number };
  /** Addition: the exact charge, a decimal string, as on chat completions. */
  cost: string;
}

export interface ResponseObject extends ResponseEcho {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  model: string;
  output: OutputItem[];
  output_text: string;
  usage: ResponseUsage | null;
}

/** What every Response of one request shares, whichever event or body carries it. */
export interface ResponseShell {
  id: string;
  createdAt: number;
  /** The gateway slug, never the upstream's name. */
  model: string;
  echo: ResponseEcho;
}

/** Item ids derive from the request id, so every id in a response leads back to its generation record. */
export function itemIds(requestId: string) {
  const suffix = requestId.replace(/^req_/, '');
  return {
    message: (n: number) => (n === 0 ? `msg_${suffix}` : `msg_${suffix}_${n}`),
    call: (n: number) => `fc_${suffix}_${n}`,
    /** Only for upstreams that send a tool call without an id: the client needs one to answer the call. */
    callId: (n: number) => `call_${suffix}_${n}`,
  };
}

/** How a chat finish reason ends a response: a cut-off answer is `incomplete`, anything else `completed`. */
export function endingOf(finishReason: string | null): {
  status: 'completed' | 'incomplete';
  itemStatus: ItemStatus;
  incomplete: ResponseObject['incomplete_details'];
} {
  if (finishReason === 'length') return { status: 'incomplete', itemStatus: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', itemStatus: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', itemStatus: 'completed', incomplete: null };
}

export function responseUsage(u: ChatUsageFigures): ResponseUsage {
  return {
    input_tokens: u.prompt_tokens,
    output_tokens: u.completion_tokens,
    total_tokens: u.total_tokens,
    input_tokens_details: { cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens_details: { reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? 0 },
    cost: u.cost,
  };
}

export function responseObject(
  shell: ResponseShell,
  state: {
    status: ResponseStatus;
    output: OutputItem[];
    usage: ResponseUsage | null;
    incomplete?: ResponseObject['incomplete_details'];
    error?: ResponseObject['error'];
  },
): ResponseObject {
  const { echo } = shell;
  return {
    id: shell.id,
    object: 'response',
    created_at: shell.createdAt,
    status: state.status,
    error: state.error ?? null,
    incomplete_details: state.incomplete ?? null,
    model: shell.model,
    output: state.output,
    output_text: outputText(state.output),
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    temperature: echo.temperature,
    top_p: echo.top_p,
    parallel_tool_calls: echo.parallel_tool_calls,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    metadata: echo.metadata,
    usage: state.usage,
  };
}

export function outputText(output: OutputItem[]): string {
  let text = '';
  for (const item of output) {
    if (item.type !== 'message') continue;
    for (const p of item.content) if (p.type === 'output_text') text += p.text;
  }
  return text;
}

/** A finished chat completion as a Response. */
export function fromCompletion(shell: ResponseShell, completion: ChatCompletion, usage: ChatUsageFigures): ResponseObject {
  const choice = completion.choices.find((c) => c.index === 0) ?? completion.choices[0];
  const ending = endingOf(choice?.finish_reason ?? null);
  const output = outputOf(choice?.message ?? { role: 'assistant', content: null }, itemIds(shell.id), ending.itemStatus);
  return responseObject(shell, { status: ending.status, incomplete: ending.incomplete, output, usage: responseUsage(usage) });
}

interface ChatToolCallOut {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** The assistant's text (and refusal) as one message item, then one function_call item per tool call. */
function outputOf(message: ChatCompletion['choices'][number]['message'], ids: ReturnType<typeof itemIds>, status: ItemStatus): OutputItem[] {
  const text = typeof message.content === 'string' ? message.content : '';
  const refusal = typeof message.refusal === 'string' ? message.refusal : '';
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as ChatToolCallOut[]) : [];
  const items: OutputItem[] = [];
  // A reply of nothing at all is still a message, so output_text reads '' rather than the output being empty.
  if (text || refusal || calls.length === 0) {
    const content: MessagePart[] = [];
    if (text || !refusal) content.push({ type: 'output_text', text, annotations: [] });
    if (refusal) content.push({ type: 'refusal', refusal });
    items.push({ type: 'message', id: ids.message(0), status, role: 'assistant', content });
  }
  calls.forEach((c, n) => {
    items.push({
      type: 'function_call',
      id: ids.call(n),
      call_id: c.id || ids.callId(n),
      name: c.function?.name ?? '',
      arguments: c.function?.arguments ?? '',
      status,
    });
  });
  return items;
}
