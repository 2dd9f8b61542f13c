import http from 'node:http';
import type net from 'node:net';
import { ReplicaSet } from '@gateway/topology';
import { ReplicaAgent } from './replica-agent';

/** A replica: answers with its name and the body it received. */
async function replica(name: string): Promise<{ origin: string; server: http.Server; seen: string[] }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push(body);
      res.end(`${name}:${body}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, server, seen };
}

function post(agent: http.Agent, origin: string, body: string): Promise<string> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method: 'POST', path: '/', agent }, (res) => {
      let text = '';
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('ReplicaAgent', () => {
  it('sends a request whose replica refuses the connection to the next one, body and all, and skips the dead one after', async () => {
    const a = await replica('a');
    const b = await replica('b');
    const deadOrigin = a.origin;
    await new Promise((r) => a.server.close(r));
    const set = new ReplicaSet([deadOrigin, b.origin]);
    const agent = new ReplicaAgent(set, { keepAlive: true });
    try {
      expect(await post(agent, set.next(), 'first')).toBe('b:first');
      expect(set.live(deadOrigin)).toBe(false);
      // The turn now skips it.
      expect([set.next(), set.next()]).toEqual([b.origin, b.origin]);
      expect(await post(agent, b.origin, 'second')).toBe('b:second');
      expect(b.seen).toEqual(['first', 'second']);
    } finally {
      agent.destroy();
      await new Promise((r) => b.server.close(r));
    }
  });

  it('fails the request when every replica refuses', async () => {
    const a = await replica('a');
    await new Promise((r) => a.server.close(r));
    const agent = new ReplicaAgent(new ReplicaSet([a.origin]), { keepAlive: true });
    await expect(post(agent, a.origin, 'x')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    agent.destroy();
  });
});
