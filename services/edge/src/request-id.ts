import type { Request, Response } from 'express';
import { INTERNAL, newRequestId } from '@gateway/service-kit';

/**
 * Every request gets `req_<id>` before anything else can fail, so even a bad key's error carries one.
 * Client-sent `x-gateway-*` headers are dropped: only the edge may set them.
 */
export function assignRequestId(req: Request, res: Response): void {
  for (const h in req.headers) if (h.startsWith('x-gateway-')) delete req.headers[h];
  const id = newRequestId();
  req.headers[INTERNAL.requestId] = id;
  req.headers[INTERNAL.startedAt] = String(Date.now());
  res.setHeader('x-gateway-request-id', id);
}
