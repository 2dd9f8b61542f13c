import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { describeOnEngines, openTestDb, type TestDb } from '@gateway/db/testing';
import { createLogger, finishApp, INTERNAL } from '@gateway/service-kit';
import { migrations } from '../migrations';
import { filesystemStorage } from '../storage/filesystem';
import type { MediaStorage } from '../storage/port';
import { mountFiles } from './handler';
import { FileRefs } from './refs';
import { sweepExpiredMedia } from './sweeper';

const BYTES = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));

/** An origin that serves BYTES with Range support, answers 404 under /gone and never answers under /stall. */
async function startOrigin(): Promise<{ url: string; received: http.IncomingHttpHeaders[]; close(): Promise<void> }> {
  const received: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    received.push(req.headers);
    if (req.url === '/gone') return void res.writeHead(404).end('no such object');
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    const headers = { 'content-type': 'application/octet-stream', server: 'origin-secret-server', 'x-origin-region': 'eu-secret-1' };
    if (!m) return void res.writeHead(200, { ...headers, 'content-length': BYTES.length }).end(BYTES);
    const [start, end] = [Number(m[1]), Number(m[2])];
    res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${BYTES.length}`, 'content-length': end - start + 1 });
    res.end(BYTES.subarray(start, end + 1));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describeOnEngines('GET /v1/files/{id}', (engine) => {
  let t: TestDb;
  let dir: string;
  let storage: MediaStorage;
  let refs: FileRefs;
  let now = Date.now();
  let origin: Awaited<ReturnType<typeof startOrigin>>;
  let server: http.Server;
  let base: string;
  let sweep: () => Promise<void>;

  beforeAll(async () => {
    t = await openTestDb(engine, 'media', migrations);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-media-'));
    storage = filesystemStorage(dir);
    refs = new FileRefs(t.db, 60_000, () => now);
    origin = await startOrigin();
    sweep = async () => void (await sweepExpiredMedia(refs, storage));
    const app = express();
    const router = express.Router();
    mountFiles(router, { refs, storage });
    app.use(router);
    finishApp(app, createLogger('test', 'silent'));
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await origin.close();
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** As the edge forwards it: the caller's account in the internal header. */
  const get = (id: string, account: string, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/files/${id}`, {
      headers: { [INTERNAL.accountId]: account, [INTERNAL.keyId]: 'key', [INTERNAL.requestId]: 'req_test', ...headers },
    });

  const stored = async (account = 'acct_a') => {
    const [ref] = await refs.create([
      { accountId: account, source: 'stored', location: `obj_${Math.random().toString(36).slice(2)}`, contentType: 'image/png', requestId: 'req_1' },
    ]);
    await storage.put(ref.location, BYTES, 'image/png');
    return ref;
  };
  const fromOrigin = async (p = '/image.png', account = 'acct_a') =>
    (await refs.create([{ accountId: account, source: 'origin', location: `${origin.url}${p}`, contentType: 'image/webp', requestId: 'req_2' }]))[0];

  it('streams stored bytes whole, with the content type, byte ranges advertised and a private short cache', async () => {
    const r = await get((await stored()).id, 'acct_a');
    expect(r.status).toBe(200);
    expect(Object.fromEntries(['content-type', 'accept-ranges', 'cache-control', 'content-length'].map((h) => [h, r.headers.get(h)]))).toEqual({
      'content-type': 'image/png',
      'accept-ranges': 'bytes',
      'cache-control': 'private, max-age=280, must-revalidate',
      'content-length': '1000',
    });
    expect(Buffer.from(await r.arrayBuffer())).toEqual(BYTES);
  });

  it('answers a Range of stored bytes with 206 and Content-Range, a suffix range too', async () => {
    const ref = await stored();
    const r = await get(ref.id, 'acct_a', { range: 'bytes=10-19' });
    expect(r.status).toBe(206);
    expect(r.headers.get('content-range')).toBe('bytes 10-19/1000');
    expect(Buffer.from(await r.arrayBuffer())).toEqual(BYTES.subarray(10, 20));
    const tail = await get(ref.id, 'acct_a', { range: 'bytes=-5' });
    expect(tail.headers.get('content-range')).toBe('bytes 995-999/1000');
    expect(Buffer.from(await tail.arrayBuffer())).toEqual(BYTES.subarray(995));
  });

  it('answers a range past the end with 416 and the size, in the envelope', async () => {
    const r = await get((await stored()).id, 'acct_a', { range: 'bytes=5000-' });
    expect(r.status).toBe(416);
    expect(r.headers.get('content-range')).toBe('bytes */1000');
    expect((await r.json()).error.code).toBe('invalid_request');
  });

  it("streams an origin's bytes at request time, forwarding Range, and passes none of its server headers", async () => {
    const ref = await fromOrigin();
    const r = await get(ref.id, 'acct_a', { range: 'bytes=0-99' });
    expect(r.status).toBe(206);
    expect(r.headers.get('content-range')).toBe('bytes 0-99/1000');
    expect(r.headers.get('content-type')).toBe('image/webp');
    expect(Buffer.from(await r.arrayBuffer())).toEqual(BYTES.subarray(0, 100));
    expect(origin.received.at(-1)?.range).toBe('bytes=0-99');
    const everything = JSON.stringify([...r.headers]);
    expect(everything).not.toMatch(/origin-secret|eu-secret|127\.0\.0\.1/);
  });

  it('answers an unknown id and another account’s id with the same 404 not_found', async () => {
    const theirs = await stored('acct_b');
    const unknown = await get('file_000000000000000000000000', 'acct_a');
    const other = await get(theirs.id, 'acct_a');
    expect([unknown.status, other.status]).toEqual([404, 404]);
    const [a, b] = [(await unknown.json()).error, (await other.json()).error];
    expect([a.code, b.code]).toEqual(['not_found', 'not_found']);
    expect(b.message.replace(theirs.id, 'ID')).toBe(a.message.replace('file_000000000000000000000000', 'ID'));
    expect((await get('../../etc/passwd', 'acct_a')).status).toBe(404);
  });

  it('answers 410 gone once a reference has expired, and keeps answering 410 after its bytes are swept', async () => {
    const ref = await stored();
    now += 61_000;
    try {
      expect((await get(ref.id, 'acct_a')).status).toBe(410);
      await sweep();
      expect(await storage.size(ref.location)).toBeUndefined();
      const r = await get(ref.id, 'acct_a');
      expect(r.status).toBe(410);
      expect((await r.json()).error.code).toBe('gone');
    } finally {
      now -= 61_000;
    }
  });

  it('answers 410 when the origin no longer has the bytes, 503 when it cannot be reached, never naming it', async () => {
    const gone = await get((await fromOrigin('/gone')).id, 'acct_a');
    expect(gone.status).toBe(410);
    const [dead] = await refs.create([
      { accountId: 'acct_a', source: 'origin', location: 'http://127.0.0.1:9/x.png', contentType: 'image/png', requestId: 'r' },
    ]);
    const down = await get(dead.id, 'acct_a');
    expect(down.status).toBe(503);
    expect(JSON.stringify(await down.json())).not.toMatch(/127\.0\.0\.1|:9\//);
  });
});
