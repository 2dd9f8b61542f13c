import crypto from 'node:crypto';
import { holdCount, type Mode, settled, type TestGateway, useGatewaySuite } from './support/harness';

/**
 * Issue 31, item 2: an Idempotency-Key of any length reached the embedded ledger, whose write-behind then failed on
 * the unique index (SQLSTATE 54000) and retried forever: every later read of the tables, the sweeper, admin writes
 * and the next start waited on it. One rule now holds on every route of both modes: 1 to 255 characters, or 400
 * `invalid_request` before anything is held or stored.
 */
const config = {
  providers: [{ id: 'sim', kind: 'simulated' }],
  models: [
    {
      id: 'idem/chat',
      name: 'chat',
      category: 'text',
      status: 'available',
      context_length: 4096,
      max_output_tokens: 50,
      pricing: { prompt: '0.001', completion: '0.002' },
      endpoints: [{ provider: 'sim', model: 's' }],
    },
    {
      id: 'idem/embed',
      name: 'embed',
      category: 'embedding',
      status: 'available',
      pricing: { prompt: '0.001' },
      endpoints: [{ provider: 'sim', model: 'e' }],
    },
    {
      id: 'idem/video',
      name: 'video',
      category: 'video',
      status: 'available',
      pricing: { second: '0.05' },
      endpoints: [{ provider: 'sim', model: 'v' }],
    },
  ],
};

/** Above the ~2.7 KB a unique index entry holds (random, so it does not compress below it): the size the red team used. */
const HUGE_KEY = crypto.randomBytes(1536).toString('hex');

const ROUTES: Array<[string, string, unknown]> = [
  ['chat completions', '/v1/chat/completions', { model: 'idem/chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }],
  [
    'streamed chat completions',
    '/v1/chat/completions',
    { model: 'idem/chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, stream: true },
  ],
  ['embeddings', '/v1/embeddings', { model: 'idem/embed', input: 'hello' }],
  ['a queue submit', '/v1/queue/idem/video', { prompt: 'a cat', duration: 1 }],
  ['a video submit', '/v1/videos', { model: 'idem/video', prompt: 'a cat', duration: 1 }],
];

describe.each(['embedded', 'fleet'] as Mode[])('the Idempotency-Key rule on the %s gateway', (mode) => {
  let gw: TestGateway;
  let acct: { accountId: string; key: string };

  useGatewaySuite(mode, { upstreams: async () => ({ close: async () => {} }), config: () => config, credits: 10 }, (s) => {
    ({ gw, acct } = s);
  });

  const post = async (p: string, body: unknown, idem: string) => {
    const r = await fetch(`${gw.url}${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json', 'idempotency-key': idem },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, text, json: r.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined };
  };
  const jobs = async () => {
    const r = await fetch(`${gw.url}/v1/jobs`, { headers: { authorization: `Bearer ${acct.key}` } });
    return (await r.json()).data as unknown[];
  };

  it.each(ROUTES)('%s refuses a 3 KB key with 400 invalid_request and holds nothing', async (_what, p, body) => {
    const before = await holdCount(gw, acct.accountId);
    const r = await post(p, body, HUGE_KEY);
    expect(r.status).toBe(400);
    expect(r.json).toEqual({
      error: {
        code: 'invalid_request',
        message: 'Invalid request: Idempotency-Key: at most 255 characters',
        request_id: expect.stringMatching(/^req_/),
      },
    });
    // gw.ledger reads the tables after the write-behind has caught up: on the embedded gateway before the fix it never
    // did, and this read waited for good.
    expect(await holdCount(gw, acct.accountId)).toBe(before);
    expect(await jobs()).toEqual([]);
  });

  it('refuses a key of 256 characters and takes one of 255, which the ledger stores whole', async () => {
    const chat = ROUTES[0][2];
    expect((await post('/v1/chat/completions', chat, 'x'.repeat(256))).status).toBe(400);
    const longest = 'y'.repeat(255);
    expect((await post('/v1/chat/completions', chat, longest)).status).toBe(200);
    await settled(gw, acct.accountId); // the settle travels over the bus
    const rows = await gw.ledger(`SELECT state FROM holds WHERE account_id = $1 AND idempotency_key = $2`, [acct.accountId, longest]);
    expect(rows).toEqual([{ state: 'settled' }]);
  });
});
