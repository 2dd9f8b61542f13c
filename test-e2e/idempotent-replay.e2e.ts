import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { testConfig } from './support/config';
import { holdCount, settled, type Mode, type TestGateway, useGatewaySuite } from './support/harness';

const modes: Mode[] = ['embedded', 'fleet'];

/** Retries that never pay twice: a keyed call that finished is answered again, refused, or run again, never billed twice. */
describe.each(modes)('Idempotency-Key retries through the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let gw: TestGateway;

  useGatewaySuite(mode, { upstreams: startFakeOpenAI, config: (f) => testConfig(f.url), credits: 50 }, (s) => {
    ({ upstreams: fake, gw } = s);
  });

  const post = (path: string, key: string, idem: string, body: unknown) =>
    fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem },
      body: JSON.stringify(body),
    });
  const upstreamCalls = (content: string) => fake.requests.filter((r) => r.body.messages?.[0]?.content === content).length;
  const usageRecords = async (accountId: string) =>
    (await gw.ledger(`SELECT count(*)::int AS n FROM usage_records WHERE account_id = $1`, [accountId]))[0].n;
  const totalUsage = async (accountId: string) => (await gw.ledger(`SELECT total_usage::text AS u FROM accounts WHERE id = $1`, [accountId]))[0].u;

  it('a finished call retried with its key replays the same answer, and the account is charged once', async () => {
    const who = await gw.account(5);
    const content = `replay-${mode}`;
    const body = { model: 'test/ok', messages: [{ role: 'user', content }] };
    const first = await post('/v1/chat/completions', who.key, 'idem-replay', body);
    expect(first.status).toBe(200);
    const firstText = await first.text();
    const firstId = first.headers.get('x-gateway-request-id');
    await settled(gw, who.accountId);
    const charged = await totalUsage(who.accountId);
    expect(charged).toBe('5000000');

    // The same request, its fields in another order: the same request for the key.
    const again = await post('/v1/chat/completions', who.key, 'idem-replay', { messages: body.messages, model: body.model });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(firstText);
    expect(again.headers.get('x-gateway-request-id')).toBe(firstId);
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(JSON.parse(firstText)).toMatchObject({ id: firstId, usage: { cost: '0.005' } });
    await settled(gw, who.accountId);

    expect(upstreamCalls(content)).toBe(1);
    expect(await holdCount(gw, who.accountId)).toBe(1);
    expect(await usageRecords(who.accountId)).toBe(1);
    expect(await totalUsage(who.accountId)).toBe(charged);
  });

  it('another route (completions) replays through the same flow', async () => {
    const who = await gw.account(5);
    const body = { model: 'test/ok', prompt: `completion-${mode}` };
    const first = await post('/v1/completions', who.key, 'idem-completion', body);
    expect(first.status).toBe(200);
    const text = await first.text();
    await settled(gw, who.accountId);
    const again = await post('/v1/completions', who.key, 'idem-completion', body);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(text);
    expect(again.headers.get('x-gateway-request-id')).toBe(first.headers.get('x-gateway-request-id'));
    await settled(gw, who.accountId);
    expect(await holdCount(gw, who.accountId)).toBe(1);
    expect(await usageRecords(who.accountId)).toBe(1);
  });

  it('a finished stream retried with its key answers 409 duplicate_request naming its generation, and holds nothing', async () => {
    const who = await gw.account(5);
    const body = { model: 'test/ok', messages: [{ role: 'user', content: `stream-${mode}` }], stream: true };
    const first = await post('/v1/chat/completions', who.key, 'idem-stream', body);
    expect(first.status).toBe(200);
    const id = first.headers.get('x-gateway-request-id')!;
    expect(await first.text()).toContain('[DONE]');
    await settled(gw, who.accountId);

    const again = await post('/v1/chat/completions', who.key, 'idem-stream', body);
    expect(again.status).toBe(409);
    const envelope = await again.json();
    expect(envelope.error).toMatchObject({ code: 'duplicate_request', request_id: expect.stringMatching(/^req_/) });
    expect(envelope.error.message).toContain(id);
    expect(upstreamCalls(`stream-${mode}`)).toBe(1);
    expect(await holdCount(gw, who.accountId)).toBe(1);
  });

  it('the key sent again with another body is refused with 409 duplicate_request, and nothing is held or run', async () => {
    const who = await gw.account(5);
    const first = await post('/v1/chat/completions', who.key, 'idem-body', {
      model: 'test/ok',
      messages: [{ role: 'user', content: `body-1-${mode}` }],
    });
    expect(first.status).toBe(200);
    await settled(gw, who.accountId);
    for (const [path, body] of [
      ['/v1/chat/completions', { model: 'test/ok', messages: [{ role: 'user', content: `body-2-${mode}` }] }],
      // The same body on another route is another request too.
      ['/v1/completions', { model: 'test/ok', prompt: `body-1-${mode}` }],
    ] as const) {
      const other = await post(path, who.key, 'idem-body', body);
      expect(other.status).toBe(409);
      expect((await other.json()).error).toMatchObject({ code: 'duplicate_request', message: expect.stringContaining('different request') });
    }
    expect(upstreamCalls(`body-2-${mode}`)).toBe(0);
    expect(await holdCount(gw, who.accountId)).toBe(1);
  });

  it('a call that failed (its hold released) leaves its key free: the retry runs again', async () => {
    const who = await gw.account(5);
    const content = `failed-${mode}`;
    const body = { model: 'test/client-error', messages: [{ role: 'user', content }] };
    const first = await post('/v1/chat/completions', who.key, 'idem-failed', body);
    expect(first.status).toBe(400);
    await settled(gw, who.accountId);
    const again = await post('/v1/chat/completions', who.key, 'idem-failed', body);
    expect(again.status).toBe(400);
    expect((await again.json()).error.code).toBe('invalid_request');
    await settled(gw, who.accountId);
    expect(upstreamCalls(content)).toBe(2);
    const holds = await gw.ledger(`SELECT state FROM holds WHERE account_id = $1`, [who.accountId]);
    expect(holds).toEqual([{ state: 'released' }, { state: 'released' }]);
    expect(await totalUsage(who.accountId)).toBe('0');
  });
});
