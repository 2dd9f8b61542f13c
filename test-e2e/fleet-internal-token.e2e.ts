import { DEFAULT_CONFIG } from '@gateway/config';
import { INTERNAL } from '@gateway/service-kit';
import { EDGE, SERVICES } from '@gateway/topology';
import { startGateway, type TestGateway } from './support/harness';
import { COMPLETE_FLEET_ENV, everyMainRefused, fleetMainsWith } from './support/fleet-mains';

/**
 * The fleet's internal token (GATEWAY_INTERNAL_TOKEN) is what tells a peer from anyone who can reach a service's
 * address. Unset, every service used to trust every caller: billing answered any account's credits and
 * /internal/keys/verify, text spent any account's money. Now no fleet process starts without it, and every
 * service's listener refuses a request that does not carry it.
 */
describe('every fleet process refuses to start without GATEWAY_INTERNAL_TOKEN', () => {
  it('exits 1 naming the variable, with every other variable it needs set', async () => {
    // The built-in demo catalogue, consented to, so the token is the one thing missing.
    const env = { ...COMPLETE_FLEET_ENV, GATEWAY_INTERNAL_TOKEN: '', GATEWAY_CONFIG: '' };
    expect(await fleetMainsWith(env, 'GATEWAY_INTERNAL_TOKEN: required', 60_000)).toEqual(everyMainRefused());
  }, 90_000);
});

describe('a fleet service refuses every caller without the internal token', () => {
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };

  beforeAll(async () => {
    gw = await startGateway('fleet', DEFAULT_CONFIG);
    acct = await gw.account(5);
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
  });

  /** What an attacker who reaches a service's port directly would call there, as the edge would forward it. */
  const ATTACKS: Record<string, { method: string; path: string; body?: unknown }> = {
    billing: { method: 'POST', path: '/internal/keys/verify', body: { key: 'sk_live_guess' } },
    text: { method: 'POST', path: '/v1/chat/completions', body: { model: 'demo/chat-small', messages: [{ role: 'user', content: 'hi' }] } },
    media: { method: 'GET', path: '/v1/files/file_000000000000000000000000' },
    jobs: { method: 'GET', path: '/v1/jobs' },
    catalogue: { method: 'GET', path: '/v1/models' },
    mcp: { method: 'POST', path: '/v1/mcp', body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
  };

  it("answers 401 to a request with no token or a wrong one, on every service's own port: billing's credits and key checks, text, media, jobs, catalogue, mcp", async () => {
    const edgePort = Number(new URL(gw.url).port);
    const answers: Array<{ service: string; path: string; token: string; status: number; code?: string }> = [];
    for (const s of SERVICES) {
      const base = `http://127.0.0.1:${edgePort + (s.port - EDGE.port)}`;
      const attacks = [ATTACKS[s.name], ...(s.name === 'billing' ? [{ method: 'GET', path: '/v1/credits' }] : [])];
      expect({ service: s.name, known: attacks[0] !== undefined }).toEqual({ service: s.name, known: true });
      for (const { method, path, body } of attacks) {
        for (const token of ['none', 'wrong']) {
          const r = await fetch(`${base}${path}`, {
            method,
            headers: {
              'content-type': 'application/json',
              // Another account's identity, as the edge would assert it for a verified key.
              [INTERNAL.accountId]: acct.accountId,
              [INTERNAL.keyId]: acct.keyId,
              ...(token === 'wrong' ? { [INTERNAL.token]: 'f'.repeat(48) } : {}),
            },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          const json = await r.json().catch(() => undefined);
          answers.push({ service: s.name, path, token, status: r.status, code: json?.error?.code });
        }
      }
    }
    expect(answers).toEqual(answers.map(({ service, path, token }) => ({ service, path, token, status: 401, code: 'invalid_api_key' })));
    // The same calls through the edge, which carries the token, are served.
    const models = await fetch(`${gw.url}/v1/models`);
    const credits = await fetch(`${gw.url}/v1/credits`, { headers: { authorization: `Bearer ${acct.key}` } });
    expect([models.status, credits.status]).toEqual([200, 200]);
  });
});
