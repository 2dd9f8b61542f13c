import type { GatewayError } from '@gateway/errors';
import type { ChatChunk } from '@gateway/upstreams';
import type { StreamSink } from '../chat-flow/run-chat';
import type { ResponseEcho } from './translate-request';
import {
  endingOf,
  itemIds,
  responseObject,
  responseUsage,
  type FunctionCallItem,
  type ItemStatus,
  type MessageItem,
  type MessagePart,
  type OutputItem,
  type ResponseShell,
} from './translate-response';

/** Writes one server-sent event: `event: <type>` and `data: <payload>`. */
export type EmitEvent = (type: string, payload: Record<string, unknown>) => void;

interface OpenMessage {
  index: number;
  item: MessageItem;
  /** The part receiving deltas; a switch between text and refusal closes it and opens the other. */
  part?: MessagePart;
}

interface ToolDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

/**
 * Chat chunks in, responses events out, in the order the openai client's ResponseStream accumulates them:
 * response.created, response.in_progress, then per item output_item.added → (content_part.added → deltas →
 * *.done → content_part.done) | function_call_arguments.delta… → .done, output_item.done, and finally
 * response.completed / response.incomplete carrying the whole Response. A break after the first byte ends with
 * response.failed (status failed, error {code, message}): the client takes it as the final snapshot instead of
 * throwing, so finalResponse() still hands over what was delivered.
 */
export function responsesSink(emit: EmitEvent, createdAt: number, echo: ResponseEcho): StreamSink {
  let seq = 0;
  let shell: ResponseShell = { id: '', createdAt, model: '', echo };
  let ids = itemIds('');
  const output: OutputItem[] = [];
  let message: OpenMessage | undefined;
  let messages = 0;
  /** Open function calls by the chat stream's tool index; they stay open to the end, as chat may interleave them. */
  const calls = new Map<number, { index: number; item: FunctionCallItem }>();

  const send = (type: string, fields: Record<string, unknown>) => emit(type, { type, sequence_number: seq++, ...fields });
  const copy = <T>(v: T): T => structuredClone(v);

  function openMessage(): OpenMessage {
    const item: MessageItem = { type: 'message', id: ids.message(messages++), status: 'in_progress', role: 'assistant', content: [] };
    message = { index: output.length, item };
    output.push(item);
    send('response.output_item.added', { output_index: message.index, item: copy(item) });
    return message;
  }

  function openPart(m: OpenMessage, kind: MessagePart['type']): MessagePart {
    closePart(m);
    const part: MessagePart = kind === 'output_text' ? { type: 'output_text', text: '', annotations: [] } : { type: 'refusal', refusal: '' };
    m.part = part;
    m.item.content.push(part);
    send('response.content_part.added', { item_id: m.item.id, output_index: m.index, content_index: m.item.content.length - 1, part: copy(part) });
    return part;
  }

  function closePart(m: OpenMessage) {
    const part = m.part;
    if (!part) return;
    const where = { item_id: m.item.id, output_index: m.index, content_index: m.item.content.length - 1 };
    if (part.type === 'output_text') send('response.output_text.done', { ...where, text: part.text, logprobs: [] });
    else send('response.refusal.done', { ...where, refusal: part.refusal });
    send('response.content_part.done', { ...where, part: copy(part) });
    m.part = undefined;
  }

  function closeMessage(status: ItemStatus) {
    if (!message) return;
    closePart(message);
    message.item.status = status;
    send('response.output_item.done', { output_index: message.index, item: copy(message.item) });
    message = undefined;
  }

  function text(kind: MessagePart['type'], delta: string) {
    const m = message ?? openMessage();
    const part = m.part?.type === kind ? m.part : openPart(m, kind);
    const where = { item_id: m.item.id, output_index: m.index, content_index: m.item.content.length - 1 };
    if (part.type === 'output_text') {
      part.text += delta;
      send('response.output_text.delta', { ...where, delta, logprobs: [] });
    } else {
      part.refusal += delta;
      send('response.refusal.delta', { ...where, delta });
    }
  }

  function toolDelta(d: ToolDelta) {
    const key = d.index ?? 0;
    let call = calls.get(key);
    if (!call) {
      // Chat sends an assistant's text before its calls; the message is finished once a call begins.
      closeMessage('completed');
      const n = calls.size;
      const item: FunctionCallItem = {
        type: 'function_call',
        id: ids.call(n),
        call_id: d.id || ids.callId(n),
        name: d.function?.name ?? '',
        arguments: '',
        status: 'in_progress',
      };
      call = { index: output.length, item };
      calls.set(key, call);
      output.push(item);
      send('response.output_item.added', { output_index: call.index, item: copy(item) });
    } else if (d.function?.name && !call.item.name) {
      call.item.name = d.function.name;
    }
    const delta = d.function?.arguments;
    if (delta) {
      call.item.arguments += delta;
      send('response.function_call_arguments.delta', { item_id: call.item.id, output_index: call.index, delta });
    }
  }

  function closeCalls(status: ItemStatus) {
    for (const { index, item } of calls.values()) {
      send('response.function_call_arguments.done', { item_id: item.id, output_index: index, name: item.name, arguments: item.arguments });
      item.status = status;
      send('response.output_item.done', { output_index: index, item: copy(item) });
    }
    calls.clear();
  }

  return {
    start(model, requestId) {
      shell = { id: requestId, createdAt, model: model.config.id, echo };
      ids = itemIds(requestId);
      const response = responseObject(shell, { status: 'in_progress', output: [], usage: null });
      send('response.created', { response });
      send('response.in_progress', { response });
    },

    chunk(chunk: ChatChunk) {
      const choice = chunk.choices.find((c) => c.index === 0) ?? chunk.choices[0];
      const delta = choice?.delta;
      if (!delta) return;
      if (typeof delta.content === 'string' && delta.content) text('output_text', delta.content);
      if (typeof delta.refusal === 'string' && delta.refusal) text('refusal', delta.refusal);
      if (Array.isArray(delta.tool_calls)) for (const d of delta.tool_calls as ToolDelta[]) toolDelta(d);
    },

    finish(usage, finishReason) {
      const ending = endingOf(finishReason);
      // An answer of nothing still ends as one (empty) message, as the non-streamed Response does.
      if (output.length === 0) openPart(openMessage(), 'output_text');
      closeMessage(ending.itemStatus);
      closeCalls(ending.itemStatus);
      const response = responseObject(shell, {
        status: ending.status,
        incomplete: ending.incomplete,
        output: copy(output),
        usage: responseUsage(usage),
      });
      send(ending.status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
    },

    fail(error: GatewayError) {
      // What was delivered stays in the failed Response; the charge for it is on GET /v1/generation.
      for (const item of output) if (item.status === 'in_progress') item.status = 'incomplete';
      const response = responseObject(shell, {
        status: 'failed',
        output: copy(output),
        usage: null,
        error: { code: error.code, message: error.message },
      });
      send('response.failed', { response });
    },
  };
}
