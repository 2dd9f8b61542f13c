import { DEFAULT_CONFIG } from '@gateway/config';
import { type TestGateway, useGatewaySuite } from './support/harness';

/**
 * limits.hold_ttl: how long a synchronous request's hold may stay open before the sweeper releases it. Every
 * spending service takes it from the config, in one process and in the fleet alike; jobs keep their own lifetime.
 */
describe.each(['embedded', 'fleet'] as const)('limits.hold_ttl on the %s gateway', (mode) => {
  let gw: TestGateway;
  let key: string;
  useGatewaySuite(
    mode,
    { upstreams: async () => ({ close: async () => undefined }), config: () => ({ ...DEFAULT_CONFIG, limits: { hold_ttl: '7m' } }), credits: 5 },
    (s) => {
      gw = s.gw;
      key = s.acct.key;
    },
  );

  it("a chat completion's hold lives the configured 7 minutes, not the default 15", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo/chat-small', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-gateway-request-id');
    const [hold] = await gw.ledger(`SELECT extract(epoch FROM expires_at - created_at)::int AS seconds FROM holds WHERE request_id = $1`, [
      requestId,
    ]);
    expect(hold).toEqual({ seconds: 420 });
  });
});
