import { DEFAULT_CONFIG } from '@gateway/config';
import { waitFor } from '@gateway/testing';
import { expectLedgerInvariants, holdCount, settled } from '../support/harness';
import { type EmbeddedGateway, startEmbeddedWith } from './support/embedded';
import { expectRefusal } from './support/refusals';
import { fuzzConfig } from './support/routes';
import { type SlowClient, byteByByte, slowClient } from './support/slow-client';

/**
 * Slow clients against one embedded gateway whose listener timeouts are short (HTTP_HEADERS_TIMEOUT_MS,
 * HTTP_REQUEST_TIMEOUT_MS; the defaults are a minute and five): a slowloris that never finishes its headers, and
 * clients whose body never finishes. The server must cut each (408 in the envelope), hold nothing for them, and serve
 * everyone else meanwhile. Nothing here measures time: a client the server never cut fails the test at its deadline.
 */
describe('slow clients against the embedded gateway', () => {
  let gw: EmbeddedGateway;
  /** The slow clients' account: a cut request must never have held its money. */
  let slow: { accountId: string; key: string };
  /** The account of the calls served while the slow clients hang. */
  let other: { accountId: string; key: string };
  const open: SlowClient[] = [];

  beforeAll(async () => {
    gw = await startEmbeddedWith(fuzzConfig(DEFAULT_CONFIG), { HTTP_HEADERS_TIMEOUT_MS: '2000', HTTP_REQUEST_TIMEOUT_MS: '4000' });
    slow = await gw.account(5);
    other = await gw.account(5);
  }, 90_000);
  afterEach(async () => {
    for (const c of open.splice(0)) c.stop();
    if (!gw) return;
    await settled(gw);
    await expectLedgerInvariants(gw);
  });
  afterAll(async () => {
    await gw?.stop();
  });

  const host = () => new URL(gw.url).host;
  const chatBody = JSON.stringify({
    model: 'demo/chat-small',
    messages: [{ role: 'user', content: 'a body that takes its time '.repeat(8) }],
    max_tokens: 5,
  });

  async function validCall(key: string): Promise<number> {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chatBody,
    });
    await res.text();
    return res.status;
  }

  /** Starts the clients, waits until each has written something, and checks that none was cut yet. */
  async function hanging(make: () => SlowClient, count: number): Promise<SlowClient[]> {
    const clients = Array.from({ length: count }, make);
    open.push(...clients);
    await waitFor(() => clients.every((c) => c.sent > 0), 'every slow client to have begun');
    return clients;
  }

  it('a slowloris client (headers a byte at a time, never finished) is cut by the headers timeout with a 408 in the envelope, while other clients are served', async () => {
    const before = await holdCount(gw, slow.accountId);
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: ${host()}\r\nAuthorization: Bearer ${slow.key}\r\nContent-Type: application/json\r\n`;
    const clients = await hanging(
      () =>
        slowClient(
          gw.url,
          '',
          byteByByte(head, (i) => `X-Slow-${i}: 1\r\n`),
          50,
        ),
      30,
    );

    // Thirty connections hanging in their headers take nothing from anyone else.
    expect(clients.filter((c) => c.closed)).toHaveLength(0);
    expect(await validCall(other.key)).toBe(200);

    for (const answer of await Promise.all(clients.map((c) => c.cut))) expectRefusal(answer, 'a slowloris client', [408]);
    expect(await holdCount(gw, slow.accountId)).toBe(before);
    expect(await validCall(other.key)).toBe(200);
  }, 60_000);

  it('a valid chat request whose body stalls, or trickles and never ends, is cut by the request timeout (408), and no hold is placed before the body is whole', async () => {
    const before = await holdCount(gw, slow.accountId);
    const withLength = `POST /v1/chat/completions HTTP/1.1\r\nHost: ${host()}\r\nAuthorization: Bearer ${slow.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(chatBody)}\r\n\r\n`;
    const half = chatBody.slice(0, chatBody.length / 2);
    // The rest of the body a byte at a time, all but its last byte; then silence.
    const trickle = () => {
      let rest = chatBody.slice(half.length, -1);
      return () => {
        if (!rest) return undefined;
        const b = rest[0];
        rest = rest.slice(1);
        return b;
      };
    };
    const chunked = `POST /v1/chat/completions HTTP/1.1\r\nHost: ${host()}\r\nAuthorization: Bearer ${slow.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const clients = [
      ...(await hanging(() => slowClient(gw.url, withLength + half, () => undefined, 100), 5)),
      ...(await hanging(() => slowClient(gw.url, withLength + half, trickle(), 100), 5)),
      // Chunks of one space each, forever: a body that never ends and never reaches the size limit.
      ...(await hanging(() => slowClient(gw.url, `${chunked}${(half.length).toString(16)}\r\n${half}\r\n`, () => '1\r\n \r\n', 100), 5)),
    ];

    // While the bodies are incomplete: no hold for any of them, and other clients are served.
    expect(clients.filter((c) => c.closed)).toHaveLength(0);
    expect(await validCall(other.key)).toBe(200);
    expect(await holdCount(gw, slow.accountId)).toBe(before);

    for (const answer of await Promise.all(clients.map((c) => c.cut))) expectRefusal(answer, 'a body that never ends', [408]);
    expect(await holdCount(gw, slow.accountId)).toBe(before);
    expect(await validCall(other.key)).toBe(200);
  }, 60_000);

  it('control: the same request sent whole is served and holds once, so the cut requests above would have held had their bodies ended', async () => {
    const before = await holdCount(gw, slow.accountId);
    expect(await validCall(slow.key)).toBe(200);
    await settled(gw, slow.accountId);
    expect(await holdCount(gw, slow.accountId)).toBe(before + 1);
  });
});
