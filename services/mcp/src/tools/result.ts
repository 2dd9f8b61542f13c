import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { EdgeAnswer } from '../edge-client';

/** A tool's answer: the structured result (checked against the tool's outputSchema) and the same as JSON text. */
export function toolResult(structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(structured, null, 2) }], structuredContent: structured };
}

/**
 * A gateway route that refused or failed: an MCP tool error (isError), never a JSON-RPC error, so the model sees
 * the gateway's own envelope (status, code, message, request_id) and can act on it, e.g. a 402 or a 429. It is the
 * text content, as JSON: structuredContent must match the tool's outputSchema wherever it appears (clients check
 * it on errors too), and an error is not the tool's output.
 */
export function routeFailed(answer: EdgeAnswer): CallToolResult {
  const envelope = (answer.body ?? {}) as { error?: { code?: string; message?: string; request_id?: string } };
  const error = {
    status: answer.status,
    code: envelope.error?.code ?? 'upstream_unavailable',
    message: envelope.error?.message ?? `The gateway answered ${answer.status}`,
    request_id: envelope.error?.request_id ?? answer.requestId ?? null,
  };
  return { content: [{ type: 'text', text: JSON.stringify({ error }) }], isError: true };
}

/** A 2xx answer through `shape`, anything else as the route's failure. */
// biome-ignore lint/suspicious/noExplicitAny: the route's JSON, whose shape each tool knows and its outputSchema checks
export function fromRoute(answer: EdgeAnswer, shape: (body: any) => Record<string, unknown>): CallToolResult {
  if (answer.status < 200 || answer.status >= 300) return routeFailed(answer);
  return toolResult(shape(answer.body));
}
