import type { ChatChunk } from '../types';
import { UpstreamError } from '../upstream-error';
import { chatUsageOf, finishReasonOf } from './response';
import { readStreamEvent, streamUsageOf, type StreamEvent } from './schema';

/**
 * The message API's stream events (the `data:` payloads; each names its own type) as chat chunks. Text deltas
 * become content, thinking deltas reasoning_content (billed output: a stream cut before its usage counts them), tool_use blocks become tool_calls (numbered in order of appearance, arguments streamed as the
 * upstream's partial JSON), message_delta carries the finish reason, and message_stop closes with the usage chunk.
 * An `error` event, or a stream that ends before message_stop, is a broken stream.
 */
export async function* toChatChunks(payloads: AsyncIterable<string>, onMalformedUsage: (issue: string) => void): AsyncGenerator<ChatChunk> {
  let id = '';
  let model = '';
  const created = Math.floor(Date.now() / 1000);
  // Gathered as sent and judged whole at message_stop (streamUsageOf).
  let usage: Record<string, unknown> = {};
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
    let json: unknown;
    try {
      json = JSON.parse(payload);
    } catch {
      throw new UpstreamError('protocol', 'upstream sent a malformed stream event');
    }
    const event: StreamEvent | undefined = readStreamEvent(json);
    switch (event?.type) {
      case 'message_start':
        id = event.message.id;
        model = event.message.model;
        usage = { ...event.message.usage };
        yield chunk({ role: 'assistant', content: '' });
        break;
      case 'content_block_start':
        if (event.content_block.type === 'tool_use') {
          const n = toolIndex.size;
          toolIndex.set(event.index, n);
          const block = event.content_block as { id: string; name: string };
          // The input arrives as input_json_delta; the block's own (empty) input is not part of it.
          yield chunk({ tool_calls: [{ index: n, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] });
        }
        break;
      case 'content_block_delta':
        if (event.delta.type === 'text_delta' && event.delta.text) yield chunk({ content: event.delta.text });
        else if (event.delta.type === 'thinking_delta' && event.delta.thinking) yield chunk({ reasoning_content: event.delta.thinking });
        else if (event.delta.type === 'input_json_delta' && event.delta.partial_json && toolIndex.has(event.index)) {
          yield chunk({ tool_calls: [{ index: toolIndex.get(event.index), function: { arguments: event.delta.partial_json } }] });
        }
        break;
      case 'message_delta':
        // Counters in message_delta are cumulative totals: they replace, never add.
        for (const [k, v] of Object.entries(event.usage ?? {})) if (v != null) usage[k] = v;
        yield chunk({}, finishReasonOf(event.delta.stop_reason), event.delta.stop_sequence ? { stop_sequence: event.delta.stop_sequence } : {});
        break;
      case 'message_stop': {
        // Without usage the chat flow counts the tokens itself, as it does for any upstream that reports none.
        const reported = streamUsageOf(usage, onMalformedUsage);
        yield { id, object: 'chat.completion.chunk', created, model, choices: [], ...(reported ? { usage: chatUsageOf(reported) } : {}) };
        return;
      }
      case 'error': {
        const { type, message } = event.error;
        const words = (v: unknown, otherwise: string) => (typeof v === 'string' ? v.slice(0, 500) : otherwise);
        throw new UpstreamError('broken_stream', `upstream stream error: ${words(type, 'error')}: ${words(message, 'unknown')}`);
      }
      default:
        // ping, content_block_stop, and event types added later carry nothing the chat shape needs.
        break;
    }
  }
  throw new UpstreamError('broken_stream', 'upstream stream ended before message_stop');
}
