import net from 'node:net';
import { startFakeOpenAI, type FakeUpstream } from '../support/fake-openai';
import { testConfig } from '../support/config';
import { type Mode, type TestGateway, useGatewaySuite } from '../support/harness';

/**
 * Issue 31, item 1: the embedded admin API once took the in-memory ledger's exclusive lock before checking the
 * admin token, and released it on the response's `close`, which Node never emits for a pipelined response queued
 * behind one whose socket died. One unauthenticated packet then stopped every paid call until a restart.
 */

const chatBody = { model: 'test/ok', messages: [{ role: 'user', content: 'still there?' }] };

/** Sends raw bytes on a fresh connection and resets it `afterMs` later, while the first answer is still being made. */
async function sendAndReset(url: string, bytes: string, afterMs: number): Promise<void> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  await new Promise<void>((resolve) => socket.write(bytes, () => resolve()));
  if (afterMs > 0) await new Promise((r) => setTimeout(r, afterMs));
  socket.resetAndDestroy();
}

const modes: Mode[] = ['embedded', 'fleet'];

describe.each(modes)('the admin API cannot stall paid calls (%s)', (mode) => {
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  useGatewaySuite(mode, { upstreams: () => startFakeOpenAI(), config: (u: FakeUpstream) => testConfig(u.url), credits: 5 }, (s) => {
    ({ gw, acct } = s);
  });
  const chat = () =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody),
      // Liveness, not speed: before the fix this call never answered at all.
      signal: AbortSignal.timeout(15_000),
    });

  test('a pipelined unauthenticated admin POST on a reset connection leaves paid calls answering', async () => {
    const host = new URL(gw.url).host;
    const packet =
      `GET /v1/status HTTP/1.1\r\nhost: ${host}\r\n\r\n` +
      `POST /admin/v1/accounts HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`;
    // The reset must land while /v1/status is still being answered; how soon that is depends on the machine.
    // The same with the admin token and a change to the ledger: the change holds the ledger still for its own
    // statements, never until its answer is sent.
    const credits = '{"amount": "1"}';
    const authenticated =
      `GET /v1/status HTTP/1.1\r\nhost: ${host}\r\n\r\n` +
      `POST /admin/v1/accounts/${acct.accountId}/credits HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${gw.adminToken}\r\n` +
      `content-type: application/json\r\ncontent-length: ${credits.length}\r\n\r\n${credits}`;
    for (const afterMs of [0, 1, 2, 5, 10, 20]) {
      await sendAndReset(gw.url, packet, afterMs);
      await sendAndReset(gw.url, authenticated, afterMs);
    }
    for (let i = 0; i < 3; i++) expect((await chat()).status).toBe(200);
  });

  test('an authenticated admin POST whose client never finishes its body does not stall paid calls', async () => {
    const host = new URL(gw.url).host;
    const { hostname, port } = new URL(gw.url);
    const slow = net.connect(Number(port), hostname);
    await new Promise<void>((resolve) => slow.once('connect', resolve));
    slow.write(
      `POST /admin/v1/accounts HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${gw.adminToken}\r\n` +
        'content-type: application/json\r\ncontent-length: 100\r\n\r\n{"credits": ',
    );
    try {
      await new Promise((r) => setTimeout(r, 200));
      expect((await chat()).status).toBe(200);
    } finally {
      slow.destroy();
    }
  });

  test('unauthenticated admin writes are refused 401 and change nothing', async () => {
    const before = await gw.admin('GET', `/admin/v1/accounts/${acct.accountId}`);
    for (const [method, path] of [
      ['POST', '/admin/v1/accounts'],
      ['POST', `/admin/v1/accounts/${acct.accountId}/credits`],
      ['PATCH', `/admin/v1/accounts/${acct.accountId}`],
      ['DELETE', `/admin/v1/keys/${acct.keyId}`],
    ]) {
      const r = await fetch(`${gw.url}${path}`, {
        method,
        headers: { authorization: 'Bearer not-the-admin-token', 'content-type': 'application/json' },
        body: method === 'DELETE' ? undefined : JSON.stringify({ amount: '100', credits: 100, suspended: true }),
      });
      expect(r.status).toBe(401);
      expect((await r.json()).error.code).toBe('invalid_api_key');
    }
    const after = await gw.admin('GET', `/admin/v1/accounts/${acct.accountId}`);
    expect(after.json.data.credits).toBe(before.json.data.credits);
    expect((await chat()).status).toBe(200);
  });
});
