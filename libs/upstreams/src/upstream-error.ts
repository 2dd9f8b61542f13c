/**
 * Why an upstream call failed, and whether the next endpoint should take over.
 * The client's own mistakes (400, 413, 422) are not failed over: another endpoint would refuse them too.
 */
export type FailureKind = 'connect' | 'timeout' | 'status' | 'protocol' | 'broken_stream';

const CLIENT_FAULT = new Set([400, 413, 422]);

export class UpstreamError extends Error {
  readonly clientFault: boolean;

  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly status?: number,
    /** For protocols whose upstream says outright that the input was refused (a queue's content-policy failure). */
    clientFault?: boolean,
  ) {
    super(message);
    this.name = 'UpstreamError';
    this.clientFault = clientFault ?? (kind === 'status' && status !== undefined && CLIENT_FAULT.has(status));
  }
}

/** Maps undici and abort errors to failure kinds. */
export function classify(err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const code = (err as { code?: string }).code ?? '';
  const name = (err as { name?: string }).name ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || name === 'TimeoutError') {
    return new UpstreamError('timeout', 'upstream did not answer in time');
  }
  if (code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || name === 'AbortError') {
    return new UpstreamError('broken_stream', 'upstream connection broke');
  }
  return new UpstreamError('connect', `upstream unreachable: ${code || (err as Error).message}`);
}
