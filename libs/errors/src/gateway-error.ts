/**
 * The one error type of the gateway. Every failure that reaches a client becomes one of these,
 * and `envelope.ts` is the only place that turns it into a response, so status and code never drift.
 */
const STATUS = {
  invalid_request: 400,
  invalid_api_key: 401,
  insufficient_credits: 402,
  not_found: 404,
  model_unavailable: 409,
  canceled: 409,
  duplicate_request: 409,
  gone: 410,
  rate_limited: 429,
  upstream_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof STATUS;

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

export class GatewayError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    opts: { status?: number; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'GatewayError';
    // model_unavailable is 404 on lookups and 409 on routing; the caller says which.
    this.status = opts.status ?? STATUS[code];
    this.headers = opts.headers ?? {};
  }

  static notFound(what: string): GatewayError {
    return new GatewayError('model_unavailable', `${what} not found`, { status: 404 });
  }

  /** Errors that crossed a service boundary as an envelope are rebuilt here, keeping status and code. */
  static fromEnvelope(status: number, body: unknown): GatewayError | undefined {
    const err = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
    if (!err || typeof err.code !== 'string' || !(err.code in STATUS)) return undefined;
    return new GatewayError(err.code as ErrorCode, err.message ?? err.code, { status });
  }
}
