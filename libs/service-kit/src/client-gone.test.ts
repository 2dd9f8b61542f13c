import http from 'node:http';
import net from 'node:net';
import { clientGone } from './client-gone';

/**
 * Node emits no `close` for a pipelined response queued behind one whose socket died; whatever a handler ties to
 * the client (an upstream call, a stream, a slot) must still learn that it left.
 */
describe('clientGone', () => {
  let server: http.Server;
  let port: number;
  const aborted: string[] = [];
  let releaseFirst!: () => void;
  const handled = new Map<string, Promise<void>>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const client = clientGone(res);
      const url = req.url ?? '';
      handled.set(
        url,
        new Promise<void>((done) => {
          client.signal.addEventListener('abort', () => {
            aborted.push(url);
            done();
          });
        }),
      );
      // The first answer waits, so the second is queued behind it when the connection dies.
      if (url === '/first') releaseFirst = () => res.end('first');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('fires for a pipelined request queued behind an unfinished answer when the connection is reset', async () => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((r) => socket.once('connect', r));
    socket.write('GET /first HTTP/1.1\r\nhost: x\r\n\r\nGET /second HTTP/1.1\r\nhost: x\r\n\r\n');
    // Wait until both requests reach the handler.
    for (let i = 0; i < 200 && handled.size < 2; i++) await new Promise((r) => setTimeout(r, 5));
    expect([...handled.keys()]).toEqual(['/first', '/second']);
    socket.resetAndDestroy();
    await Promise.all(handled.values());
    expect(aborted.sort()).toEqual(['/first', '/second']);
    releaseFirst();
  });
});
