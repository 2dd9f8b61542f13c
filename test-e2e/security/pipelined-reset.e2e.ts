import net from 'node:net';
import { waitFor } from '@gateway/testing';
import { testConfig } from '../support/config';
import { startFakeOpenAI, type FakeUpstream } from '../support/fake-openai';
import { type Mode, type TestGateway, useGatewaySuite } from '../support/harness';

/**
 * Node never emits `close` for a pipelined response queued behind one whose socket died. A paid stream queued that
 * way once ran its upstream call to the end for a client long gone, and was charged in full as if delivered.
 */

const modes: Mode[] = ['embedded', 'fleet'];

describe.each(modes)('a paid stream pipelined behind another, on a connection reset (%s)', (mode) => {
  let gw: TestGateway;
  useGatewaySuite(mode, { upstreams: () => startFakeOpenAI(), config: (u: FakeUpstream) => testConfig(u.url), credits: 5 }, (s) => {
    gw = s.gw;
  });

  it('stops both upstream calls and charges neither as delivered whole', async () => {
    const payer = await gw.account(5);
    const { hostname, port, host } = new URL(gw.url);
    const stream = (tag: string) => {
      // test/trickle streams 5 words, 2 s apart: the second request stays queued behind the first for seconds.
      const body = JSON.stringify({ model: 'test/trickle', messages: [{ role: 'user', content: tag }], stream: true });
      return (
        `POST /v1/chat/completions HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${payer.key}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      );
    };
    const socket = net.connect(Number(port), hostname);
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(stream('first') + stream('second'));
    // Both calls have their holds (and their upstream streams) before the connection dies.
    await waitFor(
      async () => (await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [payer.accountId]))[0].n === 2,
      'both calls to hold',
      15_000,
    );
    socket.resetAndDestroy();
    // Well before the 10 s the trickle takes to finish: a call still running to its end would still be open.
    await waitFor(
      async () => (await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1 AND state = 'open'`, [payer.accountId]))[0].n === 0,
      'both holds to close once the client is gone',
      6_000,
    );
    const records = await gw.ledger<{ status: string; tokens_completion: number }>(
      `SELECT status, tokens_completion FROM usage_records WHERE account_id = $1`,
      [payer.accountId],
    );
    expect(records).toHaveLength(2);
    for (const r of records) {
      expect(r.status).not.toBe('succeeded');
      expect(r.tokens_completion).toBeLessThan(5);
    }
  }, 60_000);
});
