import { GatewayError } from '@gateway/errors';
import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * The body as JSON-RPC messages; anything else is the transport's error, answered over HTTP (400 envelope). A
 * batch longer than `maxBatch` is refused whole, before any message of it is even validated: 1,000 cheap calls in
 * one POST once held the event loop for 8 s.
 */
export function messagesOf(raw: unknown, maxBatch: number): { messages: JSONRPCMessage[]; batch: boolean } {
  const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : '';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new GatewayError('invalid_request', 'The body is not JSON: POST /v1/mcp takes one JSON-RPC 2.0 message (or a batch of them)');
  }
  const batch = Array.isArray(parsed);
  const list = batch ? (parsed as unknown[]) : [parsed];
  if (list.length === 0) throw new GatewayError('invalid_request', 'An empty batch: send at least one JSON-RPC message');
  if (list.length > maxBatch) {
    throw new GatewayError('invalid_request', `A batch of ${list.length} messages: at most ${maxBatch} per POST; send the rest in later ones`);
  }
  const messages = list.map((m, i) => {
    const r = JSONRPCMessageSchema.safeParse(m);
    if (!r.success)
      throw new GatewayError('invalid_request', `${batch ? `Message ${i}` : 'The body'} is not a JSON-RPC 2.0 message (jsonrpc "2.0", method, id)`);
    return r.data;
  });
  return { messages, batch };
}
