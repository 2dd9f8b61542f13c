import type { ChatCompletion, ChatUsage } from '../types';
import type { MessagesAnswer, MessagesUsage, ToolUseBlock } from './wire';

const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export function finishReasonOf(stopReason: string | null | undefined): string | null {
  if (!stopReason) return null;
  return FINISH[stopReason] ?? 'stop';
}

/**
 * The message API counts cache reads and writes beside input_tokens; the chat shape counts them in prompt_tokens and
 * names them in prompt_tokens_details, where the pricing reads them. Thinking is in output_tokens, with no count
 * of its own, so no reasoning_tokens is made up.
 */
export function chatUsageOf(u: MessagesUsage): ChatUsage {
  const read = u.cache_read_input_tokens ?? 0;
  const write = u.cache_creation_input_tokens ?? 0;
  const prompt = u.input_tokens + write + read;
  const completion = u.output_tokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(read || write ? { prompt_tokens_details: { cached_tokens: read, cache_write_tokens: write } } : {}),
  };
}

function toolCallOf(block: ToolUseBlock) {
  return {
    id: block.id,
    type: 'function' as const,
    function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
  };
}

/**
 * A message-API answer as a chat completion. `stop_sequence` rides along on the choice (an extra field) because
 * the chat shape has no place for which sequence stopped the answer and the messages route reports it.
 */
export function toChatCompletion(answer: MessagesAnswer): ChatCompletion {
  let text = '';
  const toolCalls = [];
  for (const block of answer.content ?? []) {
    if (block.type === 'text') text += (block as { text: string }).text;
    else if (block.type === 'tool_use') toolCalls.push(toolCallOf(block as ToolUseBlock));
  }
  return {
    id: answer.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: answer.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text || (toolCalls.length ? null : ''), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        finish_reason: finishReasonOf(answer.stop_reason),
        ...(answer.stop_sequence ? { stop_sequence: answer.stop_sequence } : {}),
      },
    ],
    // Without usage the chat flow counts the tokens itself, as it does for any upstream that reports none.
    ...(answer.usage ? { usage: chatUsageOf(answer.usage) } : {}),
  };
}
