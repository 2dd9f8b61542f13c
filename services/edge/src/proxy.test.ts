import crypto from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import type { Request } from 'express';
import { readEnv } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { deployed, notDeployed, proxyTo } from './proxy';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

async function listen(handler: Handler): Promise<{ url: string; server: http.Server; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    url,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The edge's side: a server whose every request the proxy forwards to `address`. */
function edgeFor(address: string) {
  const proxy = proxyTo(address);
  return listen((req, res) => proxy(req as never, res as never, () => {}));
}

const bodyOf = async (req: http.IncomingMessage) => {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts);
};

describe('the edge proxy', () => {
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) await o.close();
  });
  const track = <T extends { close(): Promise<void> }>(o: T) => {
    open.push(o);
    return o;
  };

  it('forwards method, path, body and end-to-end headers; adds X-Forwarded-*; drops hop-by-hop headers both ways', async () => {
    let seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string } | undefined;
    const service = track(
      await listen(async (req, res) => {
        seen = { method: req.method, url: req.url, headers: req.headers, body: (await bodyOf(req)).toString() };
        res.writeHead(201, 'Made', {
          'content-type': 'application/json',
          'set-cookie': ['a=1', 'b=2'],
          'x-custom': 'yes',
          'keep-alive': 'timeout=9',
        });
        res.end('{"ok":true}');
      }),
    );
    const edge = track(await edgeFor(service.url));
    // node's client, which sends a Connection header as given (fetch refuses to).
    const r = await new Promise<http.IncomingMessage & { text: string }>((resolve, reject) => {
      const q = http.request(`${edge.url}/v1/things?x=1`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer k',
          'x-forwarded-for': '10.0.0.9',
          connection: 'keep-alive, x-drop-me',
          'x-drop-me': 'hop',
        },
      });
      q.on('response', async (res) => resolve(Object.assign(res, { text: (await bodyOf(res)).toString() })));
      q.on('error', reject);
      q.end('{"hello":"world"}');
    });
    expect({ status: r.statusCode, statusText: r.statusMessage, body: r.text }).toEqual({ status: 201, statusText: 'Made', body: '{"ok":true}' });
    expect(r.headers['x-custom']).toBe('yes');
    expect(r.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(r.headers['keep-alive']).not.toBe('timeout=9');
    expect(seen).toMatchObject({ method: 'POST', url: '/v1/things?x=1', body: '{"hello":"world"}' });
    expect(seen?.headers).toMatchObject({
      authorization: 'Bearer k',
      'content-type': 'application/json',
      'x-forwarded-for': '10.0.0.9,127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-port': new URL(edge.url).port,
      'x-forwarded-host': new URL(edge.url).host,
    });
    expect(seen?.headers['x-drop-me']).toBeUndefined();
  });

  it('streams both ways with backpressure: 8 MiB up and 8 MiB down arrive whole', async () => {
    const down = crypto.randomBytes(8 * 1024 * 1024);
    let upHash = '';
    const service = track(
      await listen(async (req, res) => {
        upHash = crypto
          .createHash('sha256')
          .update(await bodyOf(req))
          .digest('hex');
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        for (let i = 0; i < down.length; i += 64 * 1024) {
          if (!res.write(down.subarray(i, i + 64 * 1024))) await new Promise((r) => res.once('drain', r));
        }
        res.end();
      }),
    );
    const edge = track(await edgeFor(service.url));
    const up = crypto.randomBytes(8 * 1024 * 1024);
    const r = await fetch(`${edge.url}/v1/files`, { method: 'PUT', body: up });
    const got = Buffer.from(await r.arrayBuffer());
    expect(upHash).toBe(crypto.createHash('sha256').update(up).digest('hex'));
    expect(got.equals(down)).toBe(true);
  });

  it('passes each event of a stream on as it comes, before the service has finished', async () => {
    let finish: () => void = () => {};
    const service = track(
      await listen((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
        finish = () => res.end('data: [DONE]\n\n');
      }),
    );
    const edge = track(await edgeFor(service.url));
    const r = await fetch(`${edge.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    const reader = (r.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    finish();
    let rest = '';
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += new TextDecoder().decode(c.value);
    expect(rest).toBe('data: [DONE]\n\n');
  });

  it('sends a request whose replica refuses the connection to the next one, body and all, and leaves the dead one out after', async () => {
    const dead = await listen(() => {});
    await dead.close();
    const bodies: string[] = [];
    const live = track(
      await listen(async (req, res) => {
        bodies.push((await bodyOf(req)).toString());
        res.end('live');
      }),
    );
    const edge = track(await edgeFor(`${dead.url},${live.url}`));
    for (const body of ['first', 'second', 'third']) {
      const r = await fetch(`${edge.url}/v1/x`, { method: 'POST', body });
      expect({ status: r.status, text: await r.text() }).toEqual({ status: 200, text: 'live' });
    }
    expect(bodies).toEqual(['first', 'second', 'third']);
  });

  it('answers 503 in the envelope, with the request id, when every replica refuses', async () => {
    const dead = await listen(() => {});
    await dead.close();
    const edge = track(await edgeFor(dead.url));
    const r = await fetch(`${edge.url}/v1/x`, { method: 'POST', headers: { 'x-gateway-request-id': 'req_abc' }, body: 'x' });
    expect({ status: r.status, body: await r.json() }).toEqual({
      status: 503,
      body: { error: { code: 'upstream_unavailable', message: 'A gateway service is unreachable; try again shortly', request_id: 'req_abc' } },
    });
  });

  it("cuts the client's answer when the service cuts its own mid-body, rather than end it as if whole", async () => {
    const service = track(
      await listen((_req, res) => {
        res.writeHead(200, { 'content-type': 'audio/mpeg' }); // chunked: only the cut tells a whole answer from a part
        res.write(Buffer.alloc(100));
        setTimeout(() => res.socket?.destroy(), 20);
      }),
    );
    const edge = track(await edgeFor(service.url));
    const r = await fetch(`${edge.url}/v1/audio/speech`, { method: 'POST', body: '{}' });
    await expect(r.arrayBuffer()).rejects.toThrow();
  });

  it('closes the hop to the service when the client leaves, so the service stops its upstream call', async () => {
    let serviceSawClose: () => void = () => {};
    const closed = new Promise<void>((r) => {
      serviceSawClose = r;
    });
    const service = track(
      await listen((req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
        req.socket.once('close', () => serviceSawClose());
      }),
    );
    const edge = track(await edgeFor(service.url));
    const ac = new AbortController();
    const r = await fetch(`${edge.url}/v1/chat/completions`, { method: 'POST', body: '{}', signal: ac.signal });
    await (r.body as ReadableStream<Uint8Array>).getReader().read();
    ac.abort();
    await closed;
  });
});

describe('a service the deployment leaves out (the chart with services.<name>.enabled false)', () => {
  it('is one whose URL variable is unset; the edge then starts and answers its routes 404 instead of crash-looping', () => {
    const env = readEnv({ BILLING_URL: 'http://billing:8081', TEXT_URL: 'http://text:8082' });
    expect({ text: deployed(env, 'text'), mcp: deployed(env, 'mcp') }).toEqual({ text: true, mcp: false });
    let refused: unknown;
    notDeployed('mcp')({} as Request, {} as never, (err?: unknown) => {
      refused = err;
    });
    expect(refused).toBeInstanceOf(GatewayError);
    expect({ status: (refused as GatewayError).status, code: (refused as GatewayError).code }).toEqual({ status: 404, code: 'not_found' });
    expect((refused as GatewayError).message).toContain('mcp');
  });
});
