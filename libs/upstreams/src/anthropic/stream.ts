import type { ChatChunk } from '../types';
import { UpstreamError } from '../upstream-error';
import { chatUsageOf, finishReasonOf } from './response';
import type { MessagesUsage, ToolUseBlock } from './wire';

interface StreamEvent {
  type: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: Partial<MessagesUsage> };
  content_block?: { type: string; [k: string]: unknown };
  delta?: { type?: string; text?: string; thinking?: string; partial_json?: string; stop_reason?: string | null; stop_sequence?: string | null };
  usage?: Partial<MessagesUsage>;
  error?: { type?: string; message?: string };
}

/**
 * The message API's stream events (the `data:` payloads; each names its own type) as chat chunks. Text deltas
 * become content, thinking deltas reasoning_content (billed output: a stream cut before its usage counts them), tool_use blocks become tool_calls (numbered in order of appearance, arguments streamed as the
 * upstream's partial JSON), message_delta carries the finish reason, and message_stop closes with the usage chunk.
 * An `error` event, or a stream that ends before message_stop, is a broken stream.
 */
export async function* toChatChunks(payloads: AsyncIterable<string>): AsyncGenerator<ChatChunk> {
  let id = '';
  let model = '';
  const created = Math.floor(Date.now() / 1000);
  let usage: Partial<MessagesUsage> = {};
  // Upstream block index → tool call index; other blocks (text, thinking...) have no entry.
  const toolIndex = new Map<number, number>();
  const chunk = (delta: ChatChunk['choices'][number]['delta'], finish: string | null = null, extra: Record<string, unknown> = {}): ChatChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish, ...extra }],
  });

  for await (const payload of payloads) {
    let event: StreamEvent;
    try {
      event = JSON.parse(payload);
    } catch {
      throw new UpstreamError('protocol', 'upstream sent a malformed stream event');
    }
    switch (event.type) {
      case 'message_start':
        id = event.message?.id ?? '';
        model = event.message?.model ?? '';
        usage = { ...event.message?.usage };
        yield chunk({ role: 'assistant', content: '' });
        break;
      case 'content_block_start':
        if (event.content_block?.type === 'tool_use') {
          const n = toolIndex.size;
          toolIndex.set(event.index ?? 0, n);
          const block = event.content_block as ToolUseBlock;
          // The input arrives as input_json_delta; the block's own (empty) input is not part of it.
          yield chunk({ tool_calls: [{ index: n, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] });
        }
        break;
      case 'content_block_delta':
        if (event.delta?.type === 'text_delta' && event.delta.text) yield chunk({ content: event.delta.text });
        else if (event.delta?.type === 'thinking_delta' && event.delta.thinking) yield chunk({ reasoning_content: event.delta.thinking });
        else if (event.delta?.type === 'input_json_delta' && event.delta.partial_json && toolIndex.has(event.index ?? 0)) {
          yield chunk({ tool_calls: [{ index: toolIndex.get(event.index ?? 0), function: { arguments: event.delta.partial_json } }] });
        }
        break;
      case 'message_delta':
        // Counters in message_delta are cumulative totals: they replace, never add.
        for (const [k, v] of Object.entries(event.usage ?? {})) if (v != null) (usage as Record<string, unknown>)[k] = v;
        yield chunk({}, finishReasonOf(event.delta?.stop_reason), event.delta?.stop_sequence ? { stop_sequence: event.delta.stop_sequence } : {});
        break;
      case 'message_stop':
        yield { id, object: 'chat.completion.chunk', created, model, choices: [], usage: chatUsageOf(usage) };
        return;
      case 'error':
        throw new UpstreamError('broken_stream', `upstream stream error: ${event.error?.type ?? 'error'}: ${event.error?.message ?? 'unknown'}`);
      default:
        // ping, content_block_stop, and event types added later carry nothing the chat shape needs.
        break;
    }
  }
  throw new UpstreamError('broken_stream', 'upstream stream ended before message_stop');
}
