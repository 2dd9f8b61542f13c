import type { ErrorRequestHandler, Response } from 'express';
import { GatewayError } from './gateway-error';

export function errorEnvelope(err: GatewayError, requestId: string) {
  return { error: { code: err.code, message: err.message, request_id: requestId } };
}

/** Maps anything thrown to the spec's envelope; unknown errors are gateway-side failures (503). */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = err as { type?: string; status?: number; statusCode?: number; message?: string };
  // body-parser errors: malformed JSON, too large, wrong charset
  if (e?.type === 'entity.parse.failed') return new GatewayError('invalid_request', 'Request body is not valid JSON');
  if (e?.type === 'entity.too.large') return new GatewayError('invalid_request', 'Request body is too large', { status: 413 });
  if (typeof e?.type === 'string' && (e.status ?? e.statusCode ?? 500) < 500) {
    return new GatewayError('invalid_request', e.message ?? 'Bad request');
  }
  // The client's too, though they carry no body-parser type: a percent-encoding in the path that does not decode
  // (the router's URIError, or a handler's own decodeURIComponent), and a body that does not inflate as its
  // Content-Encoding says (zlib's error, which body-parser marks as a 4xx to expose).
  if (err instanceof URIError) return new GatewayError('invalid_request', 'The path holds a percent-encoding that does not decode');
  const status = e?.status ?? e?.statusCode;
  if ((err as { expose?: unknown })?.expose === true && typeof status === 'number' && status >= 400 && status < 500) {
    return new GatewayError('invalid_request', `The request could not be read: ${e.message ?? 'bad request'}`);
  }
  return new GatewayError('upstream_unavailable', 'The gateway failed to handle the request');
}

export function sendError(res: Response, err: unknown, requestId: string): void {
  const ge = toGatewayError(err);
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [k, v] of Object.entries(ge.headers)) res.setHeader(k, v);
  res.status(ge.status).json(errorEnvelope(ge, requestId));
}

/**
 * Express error middleware. `requestIdOf` lets each service say where it keeps the id
 * (the edge assigns it; internal services read it from the edge's header).
 */
export function errorHandler(
  requestIdOf: (req: Parameters<ErrorRequestHandler>[1]) => string,
  onUnexpected?: (err: unknown, req: Parameters<ErrorRequestHandler>[1]) => void,
): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (!(err instanceof GatewayError) && !(err as { type?: string })?.type) onUnexpected?.(err, req);
    sendError(res, err, requestIdOf(req));
  };
}
