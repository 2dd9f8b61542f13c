import type { ChatChunk } from '@gateway/upstreams';
import type { StreamSink } from '../chat-flow/run-chat';
import { errorTypeOf, messageId, stopReasonOf, toolUseId, usageOf } from './translate';

export type EventWriter = (event: string, payload: Record<string, unknown>) => void;

interface ToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

/**
 * Chat chunks as the message API's event stream. Content blocks open and close in order: a text delta continues
 * the open text block or opens one, a tool call with a new index opens a tool_use block whose arguments stream as
 * input_json_delta. Chat upstreams stream one tool call at a time; a delta for an earlier, already closed call has
 * no block left to go to and is dropped.
 */
export function messagesStreamSink(write: EventWriter): StreamSink {
  let requestId = '';
  let open: { kind: 'text' } | { kind: 'tool'; toolIndex: number } | undefined;
  let blocks = 0;
  const seenTools = new Set<number>();
  let stopSequence: string | null = null;

  const close = () => {
    if (!open) return;
    write('content_block_stop', { type: 'content_block_stop', index: blocks - 1 });
    open = undefined;
  };
  const openBlock = (block: Record<string, unknown>, state: NonNullable<typeof open>) => {
    close();
    write('content_block_start', { type: 'content_block_start', index: blocks, content_block: block });
    blocks += 1;
    open = state;
  };
  const delta = (d: Record<string, unknown>) => write('content_block_delta', { type: 'content_block_delta', index: blocks - 1, delta: d });

  const text = (t: string) => {
    if (open?.kind !== 'text') openBlock({ type: 'text', text: '' }, { kind: 'text' });
    delta({ type: 'text_delta', text: t });
  };
  const tool = (call: ToolCallDelta) => {
    const i = call.index ?? 0;
    if (!(open?.kind === 'tool' && open.toolIndex === i)) {
      if (seenTools.has(i)) return;
      seenTools.add(i);
      openBlock(
        { type: 'tool_use', id: toolUseId(call.id, requestId, i), name: call.function?.name ?? '', input: {} },
        { kind: 'tool', toolIndex: i },
      );
    }
    if (call.function?.arguments) delta({ type: 'input_json_delta', partial_json: call.function.arguments });
  };

  return {
    start(model, id) {
      requestId = id;
      write('message_start', {
        type: 'message_start',
        // Upstreams report usage at the end: message_delta carries the figures (input_tokens included).
        message: {
          id: messageId(id),
          type: 'message',
          role: 'assistant',
          model: model.config.id,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      });
      write('ping', { type: 'ping' });
    },
    chunk(chunk: ChatChunk) {
      const choice = chunk.choices.find((c) => c.index === 0);
      if (!choice) return;
      if (typeof choice.delta?.content === 'string' && choice.delta.content) text(choice.delta.content);
      for (const call of (choice.delta?.tool_calls as ToolCallDelta[] | undefined) ?? []) tool(call);
      if (typeof choice.stop_sequence === 'string') stopSequence = choice.stop_sequence;
    },
    finish(usage, finishReason) {
      // An empty answer still has its one (empty) text block, as the non-streamed answer does.
      if (blocks === 0) openBlock({ type: 'text', text: '' }, { kind: 'text' });
      close();
      const stopReason = stopReasonOf(finishReason, stopSequence);
      write('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stopReason, stop_sequence: stopReason === 'stop_sequence' ? stopSequence : null },
        usage: usageOf(usage),
      });
      write('message_stop', { type: 'message_stop' });
    },
    fail(error) {
      write('error', { type: 'error', error: { type: errorTypeOf(error.code), message: error.message }, request_id: requestId });
    },
  };
}
