import net from 'node:net';
import { POOLED_IDLE_MS } from '@gateway/topology';
import { createLogger } from './logger';
import { createMetrics } from './metrics';
import { DRAIN_NOTICE_MS, type ServeOptions, serve } from './serve';

/**
 * A draining process must never close a keep-alive connection a caller may still pick from its idle pool: a request
 * sent on it as it closes is lost unread, and the caller cannot know (docs/reliability.md, "Replicas"). Here the
 * caller sends on a connection left idle since before the drain, as late as our callers keep one (POOLED_IDLE_MS).
 */
describe('serve: the drain notice', () => {
  const get = 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n';

  /** Resolves with what the socket has received once `done` says so, or with the error that ended it. */
  const received = (socket: net.Socket, done: (text: string) => boolean) =>
    new Promise<{ text: string; error?: string; ended: boolean }>((resolve) => {
      let text = '';
      let ended = false;
      const finish = (error?: string) => {
        socket.removeAllListeners('data');
        resolve({ text, error, ended });
      };
      socket.on('data', (chunk) => {
        text += chunk.toString();
        if (done(text)) finish();
      });
      socket.once('end', () => {
        ended = true;
        finish();
      });
      socket.once('error', (e: NodeJS.ErrnoException) => finish(e.code ?? e.message));
    });

  const serveWith = (app: Parameters<typeof serve>[0], opts: Partial<ServeOptions> = {}) =>
    serve(app, {
      service: 'test',
      port: 0,
      host: '127.0.0.1',
      metricsPort: 0,
      logger: createLogger('test', 'silent'),
      metrics: createMetrics(),
      ready: async () => {},
      ...opts,
    });
  const serveOk = (opts: Partial<ServeOptions> = {}) => serveWith((_req, res) => res.end('ok'), opts);

  /** A caller's keep-alive connection, one request answered on it, left idle. */
  async function idleConnection(port: number): Promise<net.Socket> {
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise((r) => socket.once('connect', r));
    socket.write(get);
    const first = await received(socket, (t) => t.endsWith('\r\n\r\nok'));
    expect(first.text).toMatch(/^HTTP\/1\.1 200 .*\r\nConnection: keep-alive\r\n/is);
    return socket;
  }

  it('answers a request sent on an idle keep-alive connection with Connection: close, and refuses new connections', async () => {
    const served = await serveOk();
    const socket = await idleConnection(served.port);

    // The drain begins with this connection idle in the caller's pool; the caller picks it as late as it may.
    const drained = served.shutdown();
    await new Promise((r) => setTimeout(r, POOLED_IDLE_MS));
    const second = received(socket, () => false);
    socket.write(get);
    const refused = await new Promise<string | undefined>((resolve) => {
      const other = net.connect({ host: '127.0.0.1', port: served.port });
      other.once('connect', () => {
        other.destroy();
        resolve(undefined);
      });
      other.once('error', (e: NodeJS.ErrnoException) => resolve(e.code));
    });
    const answer = await second;
    expect({ error: answer.error, ended: answer.ended }).toEqual({ error: undefined, ended: true });
    expect(answer.text).toMatch(/^HTTP\/1\.1 200 .*\r\nConnection: close\r\n.*\r\n\r\nok$/is);
    // A caller's new connection never reaches a draining listener: it may send that request to another replica.
    expect(refused).toBe('ECONNREFUSED');
    socket.destroy();
    await drained;
  });

  it('an internal listener still answers a caller whose idle timer runs late, past the public notice', async () => {
    // A loaded machine's caller (the edge) may pick its idle connection well after POOLED_IDLE_MS: our callers are
    // waited for until they close, up to INTERNAL_DRAIN_NOTICE_MS.
    const served = await serveOk();
    const socket = await idleConnection(served.port);
    const drained = served.shutdown();
    await new Promise((r) => setTimeout(r, DRAIN_NOTICE_MS + 500));
    const late = received(socket, () => false);
    socket.write(get);
    const answer = await late;
    expect({ error: answer.error, ended: answer.ended }).toEqual({ error: undefined, ended: true });
    expect(answer.text).toMatch(/^HTTP\/1\.1 200 .*\r\nConnection: close\r\n.*\r\n\r\nok$/is);
    socket.destroy();
    await drained;
  });

  it('ends the notice once the callers have closed every connection', async () => {
    // A notice of an hour: the drain resolves within the test's timeout only if it ends when the last caller leaves.
    const hour = 3_600_000;
    const idle = await serveOk({ drainNoticeMs: hour, drainTimeoutMs: 2 * hour });
    const socket = await idleConnection(idle.port);
    const drained = idle.shutdown();
    socket.end();
    await drained;
    // And with no connection at all.
    const unused = await serveOk({ drainNoticeMs: hour, drainTimeoutMs: 2 * hour });
    await unused.shutdown();
  });

  it("closes every connection it answers once draining: an app's own Connection: keep-alive, a request begun before", async () => {
    // The edge's proxy copies the service's `Connection: keep-alive`; the slow request arrives before the drain.
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const served = await serveWith((req, res) => {
      res.setHeader('connection', 'keep-alive');
      if (req.url === '/slow') void held.then(() => res.end('ok'));
      else res.end('ok');
    });
    const idle = await idleConnection(served.port);
    const slow = net.connect({ host: '127.0.0.1', port: served.port });
    await new Promise((r) => slow.once('connect', r));
    const slowAnswer = received(slow, () => false);
    slow.write(get.replace('GET / ', 'GET /slow '));
    await new Promise((r) => setTimeout(r, 100));
    const drained = served.shutdown();
    const idleAnswer = received(idle, () => false);
    idle.write(get);
    release();
    for (const answer of [await idleAnswer, await slowAnswer]) {
      expect({ error: answer.error, ended: answer.ended }).toEqual({ error: undefined, ended: true });
      expect(answer.text).toMatch(/^HTTP\/1\.1 200 .*\r\nconnection: close\r\n.*\r\n\r\nok$/is);
    }
    await drained;
  });
});
