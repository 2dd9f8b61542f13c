import type { ServerResponse } from 'node:http';

/**
 * A JSON answer (200 unless said otherwise) with the headers express's `res.json` gives it (`application/json; charset=utf-8` and its
 * length), without its per-call settings lookups, content-type negotiation and freshness check: the billed routes'
 * answers and billing's hold answers go out this way, where those steps were about 2 % of the request thread under load.
 */
export function sendJson(res: ServerResponse, body: unknown, status = 200): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}
