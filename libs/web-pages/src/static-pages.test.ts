import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import express from 'express';
import request from 'supertest';
import { CONTENT_SECURITY_POLICY } from './headers';
import { PAGE_FILES, pagesHandler } from './static-pages';

/** A package folder of its own, so the test neither needs nor disturbs the real build. */
function fakeRoot(withDist: boolean): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'web-pages-'));
  for (const { file } of Object.values(PAGE_FILES)) {
    if (!withDist && file.startsWith('dist/')) continue;
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), `content of ${file} `.repeat(20));
  }
  return root;
}

function app(root: string) {
  const a = express();
  a.use(pagesHandler(root));
  a.use((_req, res) => {
    res.status(404).send('next');
  });
  return a;
}

describe('pagesHandler', () => {
  const root = fakeRoot(true);
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('serves each page and asset with its type and the page headers', async () => {
    for (const [p, { file, type }] of Object.entries(PAGE_FILES)) {
      const r = await request(app(root)).get(p).set('accept-encoding', 'identity');
      expect({ p, status: r.status, type: r.headers['content-type'] }).toEqual({ p, status: 200, type });
      expect(r.text ?? r.body.toString()).toBe(`content of ${file} `.repeat(20));
      expect(r.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      expect(r.headers['x-content-type-options']).toBe('nosniff');
      expect(r.headers['referrer-policy']).toBe('no-referrer');
      expect(r.headers['x-frame-options']).toBe('DENY');
    }
    // With a trailing slash too.
    expect((await request(app(root)).get('/console/')).status).toBe(200);
  });

  it('gzips for a client that takes it, and answers 304 to a known etag', async () => {
    const r = await request(app(root))
      .get('/pages/console.js')
      .set('accept-encoding', 'gzip')
      .buffer(true)
      .parse((res, done) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done(null, Buffer.concat(chunks)));
      });
    expect(r.headers['content-encoding']).toBe('gzip');
    // supertest has gunzipped it already (a body that is not gzip would have failed there).
    expect((r.body as Buffer).toString()).toBe('content of dist/console.js '.repeat(20));
    expect(Number(r.headers['content-length'])).toBe(zlib.gzipSync('content of dist/console.js '.repeat(20), { level: 9 }).length);
    const again = await request(app(root))
      .get('/pages/console.js')
      .set('if-none-match', r.headers.etag as string);
    expect(again.status).toBe(304);
    const head = await request(app(root)).head('/admin');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBeDefined();
  });

  it('passes anything else on: other paths, other files of its folders, other methods', async () => {
    for (const p of ['/', '/pages/', '/pages/../package.json', '/public/console.html', '/dist/console.js', '/pages/status.ts'])
      expect({ p, status: (await request(app(root)).get(p)).status }).toEqual({ p, status: 404 });
    expect((await request(app(root)).post('/console')).status).toBe(404);
  });

  it('says the pages are not built when dist/ is missing', async () => {
    const bare = fakeRoot(false);
    const r = await request(app(bare)).get('/pages/console.js');
    expect(r.status).toBe(503);
    expect(r.text).toMatch(/pnpm install/);
    expect((await request(app(bare)).get('/console')).status).toBe(200);
    fs.rmSync(bare, { recursive: true, force: true });
  });
});
