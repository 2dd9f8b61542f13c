import type http from 'node:http';
import { solidPng } from '@gateway/upstreams/testing';

/** The PNG the fake makes at position `i` of an answer: a different colour each, so a test can tell them apart. */
export function fakeImage(i: number): Buffer {
  return solidPng(8, 8, [(40 + i * 50) % 256, 120, 200]);
}

/** Where the fake serves its own images, as an upstream's CDN would: /files/image-<i>.png on the fake's host. */
const FILE = /^\/files\/image-(\d+)\.png$/;

/**
 * POST /v1/images/generations, by upstream model:
 *   images-url    n URLs of images the fake serves itself (GET /files/image-<i>.png, Range honoured)
 *   images-b64    n images inline as b64_json
 *   images-one    one b64_json image whatever n asked (an upstream that makes fewer)
 *   images-hang   never answers; lets go when the gateway hangs up (a generation the client leaves)
 *   status-<code> that HTTP status with an OpenAI-style error body
 * Anything else answers 404, as an unknown model would.
 */
export function fakeImages(req: http.IncomingMessage, res: http.ServerResponse, body: Record<string, any>, model: string): void {
  const status = /^status-(\d+)$/.exec(model);
  const n = typeof body.n === 'number' ? body.n : 1;
  const indexes = Array.from({ length: model === 'images-one' ? 1 : n }, (_, i) => i);
  const created = Math.floor(Date.now() / 1000);
  if (model === 'images-hang') req.socket.once('close', () => res.destroy());
  else if (status) json(res, Number(status[1]), { error: { message: `fake upstream says ${status[1]}`, type: 'fake' } });
  else if (model === 'images-url')
    json(res, 200, { created, data: indexes.map((i) => ({ url: `http://${req.headers.host}/files/image-${i}.png` })) });
  else if (model === 'images-b64' || model === 'images-one')
    json(res, 200, { created, data: indexes.map((i) => ({ b64_json: fakeImage(i).toString('base64') })) });
  else json(res, 404, { error: { message: `no model ${model}`, type: 'fake' } });
}

/** GET /files/image-<i>.png: the bytes of fakeImage(i), one `bytes=` range honoured with 206; false for other paths. */
export function fakeImageFile(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const file = FILE.exec(req.url ?? '');
  if (req.method !== 'GET' || !file) return false;
  const bytes = fakeImage(Number(file[1]));
  const range = /^bytes=(\d*)-(\d*)$/.exec(String(req.headers.range ?? ''));
  // Headers a real CDN sends that must not reach the gateway's client.
  const own = { server: 'fake-cdn', 'x-origin-host': String(req.headers.host) };
  if (!range) {
    res.writeHead(200, { ...own, 'content-type': 'image/png', 'content-length': bytes.length });
    res.end(bytes);
    return true;
  }
  const start = range[1] === '' ? bytes.length - Number(range[2]) : Number(range[1]);
  const end = range[1] === '' || range[2] === '' ? bytes.length - 1 : Math.min(Number(range[2]), bytes.length - 1);
  res.writeHead(206, {
    ...own,
    'content-type': 'image/png',
    'content-range': `bytes ${start}-${end}/${bytes.length}`,
    'content-length': end - start + 1,
  });
  res.end(bytes.subarray(start, end + 1));
  return true;
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
