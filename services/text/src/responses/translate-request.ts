import type { ContentPart, InputItem, ResponsesBody, Tool, ToolChoice } from './schema';

/** A chat-completions message as this route sends it upstream. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null | ChatPart[];
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
}

type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: 'low' | 'high' | 'auto' } };

interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatBody = Record<string, unknown> & { messages: ChatMessage[] };

/** The request fields a Response repeats back, normalised to the responses shapes the openai client types. */
export interface ResponseEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  temperature: number | null;
  top_p: number | null;
  parallel_tool_calls: boolean;
  tool_choice: 'auto' | 'none' | 'required' | { type: 'function'; name: string };
  tools: Array<{ type: 'function'; name: string; description: string | null; parameters: Record<string, unknown> | null; strict: boolean | null }>;
  metadata: Record<string, unknown>;
}

/**
 * The chat-completions body for a responses request. Only what chat understands goes upstream: metadata and store
 * never do (they must not change routing, price or the answer), and tool settings only travel with tools, because
 * chat upstreams refuse tool_choice or parallel_tool_calls without them.
 */
export function toChatBody(b: ResponsesBody): ChatBody {
  const messages: ChatMessage[] = [];
  if (b.instructions) messages.push({ role: 'system', content: b.instructions });
  messages.push(...toChatMessages(b.input));

  const body: ChatBody = { messages };
  if (b.max_output_tokens != null) body.max_tokens = b.max_output_tokens;
  if (b.temperature != null) body.temperature = b.temperature;
  if (b.top_p != null) body.top_p = b.top_p;
  if (b.user != null) body.user = b.user;
  if (b.tools?.length) {
    body.tools = b.tools.map(toChatTool);
    if (b.tool_choice != null) body.tool_choice = toChatToolChoice(b.tool_choice);
    if (b.parallel_tool_calls != null) body.parallel_tool_calls = b.parallel_tool_calls;
  }
  const format = b.text?.format;
  if (format?.type === 'json_object') body.response_format = { type: 'json_object' };
  if (format?.type === 'json_schema') {
    const { type: _type, ...schema } = format;
    body.response_format = { type: 'json_schema', json_schema: dropNullish(schema) };
  }
  return body;
}

function toChatMessages(input: InputItem[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const item of input) {
    const last = out[out.length - 1];
    switch (item.type) {
      case 'message':
        out.push({ role: chatRole(item.role), content: chatContent(item.content) });
        break;
      case 'function_call': {
        const call: ChatToolCall = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
        // One assistant turn in chat carries its text and all its (parallel) calls, so consecutive items merge.
        if (last?.role === 'assistant') {
          last.tool_calls ??= [];
          last.tool_calls.push(call);
        } else {
          out.push({ role: 'assistant', content: null, tool_calls: [call] });
        }
        break;
      }
      case 'function_call_output':
        out.push({
          role: 'tool',
          tool_call_id: item.call_id,
          content: typeof item.output === 'string' ? item.output : item.output.map((p) => p.text).join(''),
        });
        break;
    }
  }
  return out;
}

/** `developer` is the newer name for the system turn; not every chat upstream knows it, every one knows `system`. */
function chatRole(role: Extract<InputItem, { type: 'message' }>['role']): ChatMessage['role'] {
  return role === 'developer' ? 'system' : role;
}

/** A lone text part becomes a plain string, the one content shape every chat upstream accepts. */
function chatContent(content: ContentPart[]): ChatMessage['content'] {
  const parts = content.map(chatPart);
  if (parts.length === 1 && parts[0].type === 'text') return parts[0].text;
  return parts;
}

function chatPart(p: ContentPart): ChatPart {
  switch (p.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: p.text };
    case 'refusal':
      return { type: 'text', text: p.refusal };
    case 'input_image':
      // Chat has no `original` detail; leaving it out lets the upstream pick its default.
      return { type: 'image_url', image_url: p.detail && p.detail !== 'original' ? { url: p.image_url, detail: p.detail } : { url: p.image_url } };
  }
}

function toolFields(t: Tool) {
  const f = 'function' in t ? t.function : t;
  return { name: f.name, description: f.description ?? null, parameters: f.parameters ?? null, strict: f.strict ?? null };
}

function toChatTool(t: Tool) {
  return { type: 'function', function: dropNullish(toolFields(t)) };
}

function toChatToolChoice(c: ToolChoice) {
  if (typeof c === 'string') return c;
  return { type: 'function', function: { name: 'function' in c ? c.function.name : c.name } };
}

/** What the Response repeats; absent settings show the defaults the upstream applies (chat's tool defaults). */
export function echoOf(b: ResponsesBody): ResponseEcho {
  const c = b.tool_choice;
  return {
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    temperature: b.temperature ?? null,
    top_p: b.top_p ?? null,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    tool_choice: c == null ? 'auto' : typeof c === 'string' ? c : { type: 'function', name: 'function' in c ? c.function.name : c.name },
    tools: (b.tools ?? []).map((t) => ({ type: 'function' as const, ...toolFields(t) })),
    metadata: b.metadata ?? {},
  };
}

function dropNullish<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v != null)) as Partial<T>;
}
