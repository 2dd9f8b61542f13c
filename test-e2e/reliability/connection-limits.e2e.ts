import crypto from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { DEFAULT_CONFIG, parseConfig, readEnv } from '@gateway/config';
import { type EmbeddedGateway, startEmbedded } from '@gateway/gateway';
import { createLogger } from '@gateway/service-kit';
import { waitFor } from '@gateway/testing';
import { openAccount } from '../support/harness';

/**
 * One client holding every connection: the review opened 19,950 idle, half-sent requests without credentials from
 * one address, until the gateway ran out of file descriptors and legitimate calls failed. The listener now bounds
 * open connections per client address and in total, and closes the excess as it is accepted. Here the limits are
 * small (HTTP_MAX_CONNECTIONS_PER_ADDRESS, HTTP_MAX_CONNECTIONS) and the attackers use other loopback addresses
 * (127.0.0.2 and up, Linux routes all of 127/8 to lo) than the legitimate client (127.0.0.1). The headers timeout
 * stays at its minute: a connection closed within the waits below was refused, not timed out, and one the timeout
 * had cut would have been answered 408 first.
 */
const PER_ADDRESS = 20;
const TOTAL = 3 * PER_ADDRESS;

interface HalfSent {
  closed: boolean;
  /** What the server wrote before it closed the connection. */
  received: number;
  socket: net.Socket;
}

describe('connection limits of the public listener (embedded gateway)', () => {
  let gw: EmbeddedGateway;
  let key: string;
  const open: HalfSent[] = [];

  beforeAll(async () => {
    const adminToken = `test-admin-${crypto.randomBytes(8).toString('hex')}`;
    const env = readEnv({
      PORT: '0',
      METRICS_PORT: '0',
      HOST: '127.0.0.1',
      GATEWAY_ADMIN_TOKEN: adminToken,
      LOG_LEVEL: 'silent',
      HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
      HTTP_MAX_CONNECTIONS: String(TOTAL),
    });
    // No status monitor: it would keep a connection of its own open to this listener, and the tests count them.
    gw = await startEmbedded(env, parseConfig({ ...DEFAULT_CONFIG, status: { enabled: false } }), createLogger('test', 'silent'));
    // The admin calls on connections of their own, closed after each answer: the tests count what the listener holds.
    ({ key } = await openAccount(
      (method, path, body) =>
        exchange({ method, path, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' } }, body).then((r) => ({
          status: r.status,
          json: r.text ? JSON.parse(r.text) : undefined,
        })),
      5,
    ));
  }, 90_000);
  afterEach(async () => {
    for (const c of open.splice(0)) c.socket.destroy();
    // Each test starts with nothing open: the server has seen every close of the one before.
    await waitFor(async () => (await connectionsHeld()) === 0, 'the listener to have let go of every connection', 10_000);
  });
  afterAll(async () => {
    await gw?.stop();
  });

  const port = () => Number(new URL(gw.url).port);
  const connectionsHeld = () => new Promise<number>((resolve, reject) => gw.served.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
  /** The listener's count of connections it closed as accepted, by reason (its metric). */
  async function refused(reason: 'address' | 'total'): Promise<number> {
    const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`gateway_connections_refused_total{listener="api",reason="${reason}"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  }

  /** `count` connections from `from`, each a request whose headers never end, opened one after the other. */
  async function halfSent(from: string, count: number): Promise<HalfSent[]> {
    const made: HalfSent[] = [];
    for (let i = 0; i < count; i++) {
      const socket = net.connect({ host: '127.0.0.1', port: port(), localAddress: from });
      const c: HalfSent = { closed: false, received: 0, socket };
      socket.on('data', (d) => (c.received += d.length));
      socket.on('error', () => {});
      socket.on('close', () => (c.closed = true));
      await new Promise<void>((resolve) => {
        socket.once('connect', () => socket.write('GET /v1/models HTTP/1.1\r\nHost: gateway\r\n', () => resolve()));
        socket.once('close', () => resolve());
      });
      made.push(c);
    }
    open.push(...made);
    return made;
  }

  /** One request on a connection of its own, closed after the answer (no keep-alive pool for the listener to hold). */
  function exchange(opts: http.RequestOptions, body?: unknown): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: port(), agent: false, ...opts }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }

  /** A legitimate call with the account's key, from 127.0.0.1 unless said otherwise. */
  const call = async (path: string, from = '127.0.0.1') =>
    (await exchange({ path, localAddress: from, headers: { authorization: `Bearer ${key}` } })).status;

  const openCount = (cs: HalfSent[]) => cs.filter((c) => !c.closed).length;

  it('past its share, one address has its further connections closed at once with nothing read or answered, and everyone else is served', async () => {
    const attacker = await halfSent('127.0.0.2', PER_ADDRESS + 10);
    await waitFor(async () => (await refused('address')) === 10 && openCount(attacker) === PER_ADDRESS, 'the excess to be closed', 10_000);
    // The first ones are held (the headers timeout will cut them), the rest were closed unanswered, not timed out (408).
    expect(attacker.map((c) => (c.closed ? `closed after ${c.received} bytes` : 'open'))).toEqual([
      ...Array(PER_ADDRESS).fill('open'),
      ...Array(10).fill('closed after 0 bytes'),
    ]);
    expect([await call('/v1/models'), await call('/v1/credits')]).toEqual([200, 200]);

    // Its connections gone, the address is served again (the count follows the closes, which the server sees in its
    // own time); a count that never went down would refuse it for good.
    for (const c of attacker) c.socket.destroy();
    await waitFor(async () => (await call('/v1/models', '127.0.0.2').catch(() => 0)) === 200, 'the address to be served again', 10_000);
  });

  it('past the total, connections from any address are closed at once; the listener takes new ones once they are gone', async () => {
    const attackers = [
      ...(await halfSent('127.0.0.3', PER_ADDRESS)),
      ...(await halfSent('127.0.0.4', PER_ADDRESS)),
      ...(await halfSent('127.0.0.5', PER_ADDRESS)),
    ];
    expect([await connectionsHeld(), openCount(attackers)]).toEqual([TOTAL, TOTAL]);
    const excess = await halfSent('127.0.0.6', 5);
    await waitFor(async () => (await refused('total')) === 5 && openCount(excess) === 0, 'the connections past the total to be closed', 10_000);
    expect(excess.map((c) => c.received)).toEqual([0, 0, 0, 0, 0]);

    for (const c of attackers.slice(0, PER_ADDRESS)) c.socket.destroy();
    await waitFor(async () => (await call('/v1/models').catch(() => 0)) === 200, 'a call once the listener has room again', 10_000);
  });
});
