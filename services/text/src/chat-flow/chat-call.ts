import type { ProviderPreferences } from '@gateway/config';
import type { ChatCall } from './run-chat';

/** What every chat-shaped route's validated body carries beside its messages, in the client's spelling. */
export interface ChatRequest {
  model: string;
  stream?: boolean | null;
  provider?: ProviderPreferences;
  max_cost?: bigint;
}

/**
 * The one chat call of a route's request, whatever API shaped it: `body` is what the route translated the request
 * into for the upstream. `fallbacks` are passed apart, not read from the request: only the OpenAI routes validate a
 * `models` list, and a route whose schema let unknown fields through must not gain one unchecked.
 */
export function chatCallOf(request: ChatRequest, body: ChatCall['body'], fallbacks: readonly string[] = []): ChatCall {
  return {
    slugs: [request.model, ...fallbacks],
    body,
    stream: request.stream === true,
    provider: request.provider,
    maxCost: request.max_cost,
  };
}
