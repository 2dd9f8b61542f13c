/**
 * The tools' one way into the gateway: an HTTP call to the edge's public listener with the caller's own key, so
 * authentication, the rate meter, holds, settles and usage records apply exactly as they do to any client.
 */
export interface EdgeAnswer {
  status: number;
  /** The parsed JSON answer (the gateway envelope on errors); undefined for an empty body. */
  body: unknown;
  /** X-Gateway-Request-Id of the call: the usage record's id (GET /v1/generation). */
  requestId: string | null;
  headers: Headers;
}

export interface EdgeCall {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export class EdgeClient {
  /** `baseUrl` is read per call: embedded, the listener's port is known only once it listens. */
  constructor(private readonly baseUrl: () => string) {}

  async call(key: string, path: string, opts: EdgeCall = {}): Promise<EdgeAnswer> {
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: 'application/json', ...opts.headers };
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${this.baseUrl()}${path}`, {
      method: opts.method ?? 'GET',
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
    });
    const text = await r.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = { error: { code: 'upstream_unavailable', message: `The gateway answered ${r.status} with a body that is not JSON`, request_id: '' } };
    }
    return { status: r.status, body, requestId: r.headers.get('x-gateway-request-id'), headers: r.headers };
  }
}
