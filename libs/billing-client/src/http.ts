import { Pool } from 'undici';
import { GatewayError } from '@gateway/errors';
import type { BillingPort, Hold, HoldRequest, KeyIdentity } from './port';

/** Billing's internal API over HTTP with a keep-alive pool; any transport failure is a 503, never a 401. */
export function createBillingHttpClient(baseUrl: string, internalToken?: string): BillingPort & { close(): Promise<void> } {
  const pool = new Pool(baseUrl, { connections: 64, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...(internalToken ? { 'x-gateway-internal-token': internalToken } : {}) };

  async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
    try {
      const res = await pool.request({ path, method: 'POST', headers, body: JSON.stringify(body, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) });
      const text = await res.body.text();
      return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
    } catch {
      throw new GatewayError('upstream_unavailable', 'The key and billing service is unreachable; try again shortly');
    }
  }

  return {
    async verifyKey(rawKey): Promise<KeyIdentity | undefined> {
      const r = await post('/internal/keys/verify', { key: rawKey });
      if (r.status === 404) return undefined;
      if (r.status !== 200) throw new GatewayError('upstream_unavailable', 'The key service failed; try again shortly');
      return r.json.data as KeyIdentity;
    },
    async placeHold(req: HoldRequest): Promise<Hold> {
      const r = await post('/internal/holds', req);
      if (r.status === 201) return { ...r.json.data, amountNano: BigInt(r.json.data.amountNano) };
      throw GatewayError.fromEnvelope(r.status, r.json) ?? new GatewayError('upstream_unavailable', 'The billing service failed to place the hold');
    },
    async ping() {
      // Billing's own readiness, asked on its internal listener (its /readyz sits on the metrics listener).
      const res = await pool.request({ path: '/internal/ready', method: 'GET', headers }).catch(() => undefined);
      await res?.body.dump();
      if (!res || res.statusCode !== 200) throw new Error('billing not ready');
    },
    close: () => pool.close(),
  };
}
