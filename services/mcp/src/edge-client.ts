import { CONNECT_TIMEOUT_MS, POOLED_IDLE, ReplicaSet, addressList } from '@gateway/topology';
import { Agent, fetch } from 'undici';

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
  private replicas?: { address: string; set: ReplicaSet };
  /**
   * Keeps an idle connection to an edge at most POOLED_IDLE_MS, as every caller of ours does (global fetch would keep
   * it 64 s on the edge's Keep-Alive hint): a draining edge never closes one this pool may still send on.
   */
  private readonly pool = new Agent({ ...POOLED_IDLE, connect: { timeout: CONNECT_TIMEOUT_MS } });

  /**
   * `baseUrl` is read per call: embedded, the listener's port is known only once it listens. It may list the edge's
   * replicas, comma-separated: taken round-robin, a refusing one skipped (@gateway/topology's ReplicaSet).
   */
  constructor(private readonly baseUrl: () => string) {}

  private edges(): ReplicaSet {
    const address = this.baseUrl();
    if (this.replicas?.address !== address) this.replicas = { address, set: new ReplicaSet(addressList(address)) };
    return this.replicas.set;
  }

  async call(key: string, path: string, opts: EdgeCall = {}): Promise<EdgeAnswer> {
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: 'application/json', ...opts.headers };
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const sent = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const r = await this.edges().call((edge) =>
      fetch(`${edge}${path}`, { method: opts.method ?? 'GET', headers, body: sent, signal: opts.signal, dispatcher: this.pool }),
    );
    const text = await r.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = { error: { code: 'upstream_unavailable', message: `The gateway answered ${r.status} with a body that is not JSON`, request_id: '' } };
    }
    return { status: r.status, body, requestId: r.headers.get('x-gateway-request-id'), headers: r.headers as unknown as Headers };
  }
}
