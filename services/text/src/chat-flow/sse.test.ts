import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { openSse, sendData } from './sse';

/** Every TCP read of one raw HTTP/1.1 exchange with `handler`, as the client received them. */
async function readsOf(handler: express.RequestHandler): Promise<string[]> {
  const app = express();
  app.get('/', handler);
  const server = http.createServer(app).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    const reads: string[] = [];
    socket.on('data', (d) => reads.push(d.toString('utf8')));
    socket.write('GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
    await new Promise((resolve) => socket.once('close', resolve));
    return reads;
  } finally {
    server.close();
  }
}

describe('openSse', () => {
  it('sends the status line and headers in the same write as the frames of the same turn', async () => {
    let writesBeforeEnd = -1;
    const reads = await readsOf((_req, res) => {
      const socket = res.socket as net.Socket & { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
      let writes = 0;
      for (const name of ['_write', '_writev'] as const) {
        const original = socket[name].bind(socket);
        socket[name] = (...a: unknown[]) => {
          writes++;
          original(...a);
        };
      }
      openSse(res);
      sendData(res, { n: 1 });
      sendData(res, { n: 2 });
      setTimeout(() => {
        writesBeforeEnd = writes;
        res.end();
      }, 50);
    });
    expect(writesBeforeEnd).toBe(1);
    expect(reads[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(reads[0]).toContain('content-type: text/event-stream; charset=utf-8');
    expect(reads[0]).toContain('data: {"n":1}\n\n');
    expect(reads[0]).toContain('data: {"n":2}\n\n');
  });

  it('still sends the headers at once when no frame follows in the turn', async () => {
    const reads = await readsOf((_req, res) => {
      openSse(res);
      // The client has the headers long before the first frame.
      setTimeout(() => {
        sendData(res, 'late');
        res.end();
      }, 200);
    });
    const headersSeenBeforeFirstFrame = /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n$/.test(reads[0]) && !reads[0].includes('data:');
    expect(headersSeenBeforeFirstFrame).toBe(true);
    expect(reads.join('')).toContain('data: late\n\n');
  });
});
