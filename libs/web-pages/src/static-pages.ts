import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { RequestHandler } from 'express';
import { PAGE_HEADERS } from './headers';

/** The package's root: public/ holds the HTML and styles as written, dist/ the browser code build.mjs bundles. */
const ROOT = path.resolve(__dirname, '..');

/** Every file served, by path; nothing else under these folders is reachable. */
export const PAGE_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/console': { file: 'public/console.html', type: 'text/html; charset=utf-8' },
  '/admin': { file: 'public/admin.html', type: 'text/html; charset=utf-8' },
  '/pages/pages.css': { file: 'public/pages.css', type: 'text/css; charset=utf-8' },
  '/pages/status.js': { file: 'dist/status.js', type: 'text/javascript; charset=utf-8' },
  '/pages/console.js': { file: 'dist/console.js', type: 'text/javascript; charset=utf-8' },
  '/pages/admin.js': { file: 'dist/admin.js', type: 'text/javascript; charset=utf-8' },
};

interface Loaded {
  body: Buffer;
  gzip: Buffer;
  etag: string;
  type: string;
}

/**
 * Serves the consoles and the pages' assets from memory (read, gzipped and hashed once per process), with the page
 * headers; any other path goes on to `next`. A GET or HEAD only: the pages are read, never posted to.
 * `root` is the package folder (tests point it elsewhere).
 */
export function pagesHandler(root = ROOT): RequestHandler {
  const cache = new Map<string, Loaded>();
  const load = (p: string): Loaded | undefined => {
    const known = cache.get(p);
    if (known) return known;
    const entry = PAGE_FILES[p];
    if (!entry) return undefined;
    let body: Buffer;
    try {
      body = fs.readFileSync(path.join(root, entry.file));
    } catch {
      return undefined;
    }
    const loaded = {
      body,
      gzip: zlib.gzipSync(body, { level: 9 }),
      etag: `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      type: entry.type,
    };
    cache.set(p, loaded);
    return loaded;
  };

  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const p = req.path.length > 1 && req.path.endsWith('/') ? req.path.slice(0, -1) : req.path;
    if (!PAGE_FILES[p]) return next();
    const file = load(p);
    res.set(PAGE_HEADERS);
    if (!file) {
      // dist/ is made by `pnpm install` (the package's prepare script); a checkout that skipped it says so.
      res.status(503).type('text/plain').send('The pages are not built: run `pnpm install` (it builds libs/web-pages).\n');
      return;
    }
    res.set({ 'content-type': file.type, 'cache-control': 'no-cache', etag: file.etag, vary: 'accept-encoding' });
    if (req.headers['if-none-match'] === file.etag) {
      res.status(304).end();
      return;
    }
    const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const body = gzip ? file.gzip : file.body;
    if (gzip) res.set('content-encoding', 'gzip');
    res.set('content-length', String(body.length));
    res.status(200).end(req.method === 'HEAD' ? undefined : body);
  };
}
