import type { Request } from 'express';
import { INTERNAL } from '@gateway/service-kit';
import { actsForCaller, type ServiceName } from '@gateway/topology';
import { extractKey } from './extract-key';

/**
 * After authentication the client's key has done its job at the edge: it is removed before the request goes on,
 * so no service can leak or misuse it, except a service that calls the gateway on the caller's behalf (mcp),
 * which gets it in its one normalised form (INTERNAL.apiKey; a client cannot send it, the edge strips x-gateway-*).
 */
export function handOnCredential(req: Request, owner: ServiceName): void {
  const key = extractKey(req.headers);
  delete req.headers.authorization;
  delete req.headers['x-api-key'];
  if (key && actsForCaller(owner)) req.headers[INTERNAL.apiKey] = key;
}
