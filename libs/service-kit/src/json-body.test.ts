import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import express, { type ErrorRequestHandler } from 'express';
import fc from 'fast-check';
import request from 'supertest';
import { pause, waitFor } from '@gateway/testing';
import { checkJsonBody } from './validate';
import { jsonBody, parseJsonBody } from './json-body';

/** An app that answers what it parsed, or the refusal's status and body-parser type. */
const appWith = (parser: express.RequestHandler) => {
  const app = express();
  app.post('/', parser, (req, res) => void res.json({ body: req.body ?? null }));
  const refusal: ErrorRequestHandler = (err, _req, res, _next) => void res.status(err.status ?? 500).json({ type: err.type ?? null });
  app.use(refusal);
  return app;
};
// Listening once for the whole file: supertest would otherwise start a server for every request of the property.
const fast = http.createServer(appWith(parseJsonBody('1kb')));
const reference = http.createServer(appWith(express.json({ limit: '1kb', verify: checkJsonBody, strict: false })));
beforeAll(async () => {
  await Promise.all([fast, reference].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
});
afterAll(async () => {
  await Promise.all([fast, reference].map((s) => new Promise((r) => s.close(r))));
});

/** The same raw request to both parsers: their answers must be the same. */
async function both(body: Buffer | string, headers: Record<string, string>) {
  const send = (app: http.Server) => {
    let r = request(app).post('/');
    for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
    return r.send(body);
  };
  const [a, b] = await Promise.all([send(fast), send(reference)]);
  return { fast: { status: a.status, body: a.body }, reference: { status: b.status, body: b.body } };
}
const json = { 'content-type': 'application/json' };

describe('parseJsonBody: the fast path parses as body-parser does, and refuses as it does', () => {
  it('gives the same body as body-parser for any JSON object or array', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })), fc.array(fc.jsonValue({ maxDepth: 3 }))),
        async (value) => {
          const text = JSON.stringify(value);
          fc.pre(Buffer.byteLength(text) <= 1024 && !text.includes('\\u0000'));
          const r = await both(text, json);
          expect(r.fast).toEqual(r.reference);
          expect(r.fast.status).toBe(200);
        },
      ),
      { numRuns: 150 },
    );
  }, 60_000);

  it.each([
    ['a bare string', '"hello"', json],
    ['null', 'null', json],
    ['broken JSON', '{"model":', json],
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), json],
    ['a NUL escape', '{"a":"\\u0000"}', json],
    ['nesting deeper than 128', `${'['.repeat(130)}${']'.repeat(130)}`, json],
    ['a byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]), json],
    ['a body over the limit', JSON.stringify({ a: 'x'.repeat(2_000) }), json],
    ['an upper-case charset', '{"a":1}', { 'content-type': 'application/json; charset=UTF-8' }],
    ['another charset (body-parser refuses it)', '{"a":1}', { 'content-type': 'application/json; charset=latin1' }],
    ['another content type (not parsed)', '{"a":1}', { 'content-type': 'text/plain' }],
    ['a gzip body (body-parser inflates it)', zlib.gzipSync('{"a":1}'), { ...json, 'content-encoding': 'gzip' }],
  ])('%s', async (_what, body, headers) => {
    const r = await both(body, headers);
    expect(r.fast).toEqual(r.reference);
  });

  it('refuses with the same status and type where body-parser refuses', async () => {
    expect((await both('{"a":', json)).fast).toEqual({ status: 400, body: { type: 'entity.parse.failed' } });
    expect((await both('{"a":"\\u0000"}', json)).fast).toEqual({ status: 400, body: { type: 'entity.verify.failed' } });
    expect((await both(JSON.stringify({ a: 'x'.repeat(2_000) }), json)).fast).toEqual({ status: 413, body: { type: 'entity.too.large' } });
  });

  it('parses a body that arrives in several packets', async () => {
    const port = (fast.address() as AddressInfo).port;
    const text = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'y'.repeat(600) }] });
    const answer = await new Promise<string>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, method: 'POST', headers: { ...json, 'content-length': Buffer.byteLength(text) } },
        (res) => {
          let out = '';
          res.on('data', (c) => (out += c));
          res.on('end', () => resolve(out));
        },
      );
      req.on('error', reject);
      req.write(text.slice(0, 100));
      setTimeout(() => req.end(text.slice(100)), 20);
    });
    expect(JSON.parse(answer)).toEqual({ body: JSON.parse(text) });
  });

  it('hands on nothing when the client goes away mid-body', async () => {
    const handled: string[] = [];
    const app = express();
    app.post('/', jsonBody('1kb'), (_req, _res) => void handled.push('handler'));
    app.use(((err, _req, _res, _next) => void handled.push(err.type)) as ErrorRequestHandler);
    let arrived = false;
    const server = http.createServer(app).on('request', () => (arrived = true));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', headers: { ...json, 'content-length': '500' } });
      req.on('error', () => {});
      req.write('{"model":"m",');
      await waitFor(() => arrived, 'the request to reach the server');
      req.destroy();
      await waitFor(() => handled.length > 0, 'the refusal');
      // Anything handed on after the refusal would come within a few turns.
      await pause(50);
      expect(handled).toEqual(['request.aborted']);
    } finally {
      server.close();
    }
  });
});

describe('jsonBody: a body that is not a JSON object is refused, saying why', () => {
  const app = express();
  app.post('/', jsonBody('1kb'), (req, res) => void res.json({ body: req.body ?? null }));
  app.use(
    ((err, _req, res, _next) => void res.status(err.status ?? 500).json({ type: err.type ?? null, message: err.message })) as ErrorRequestHandler,
  );
  const send = (body: string | undefined, headers: Record<string, string>) => {
    let r = request(app).post('/');
    for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
    return body === undefined ? r : r.send(body);
  };

  it.each([
    ['a bare string', '"hello"', 'Request body must be a JSON object; this one is a string'],
    ['a number', '42', 'Request body must be a JSON object; this one is a number'],
    ['null', 'null', 'Request body must be a JSON object; this one is null'],
  ])('%s', async (_what, body, message) => {
    const r = await send(body, json);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ type: 'entity.verify.failed', message });
  });

  it.each([
    ['text/plain', { 'content-type': 'text/plain' }, 'Content-Type text/plain'],
    ['a form', { 'content-type': 'application/x-www-form-urlencoded' }, 'Content-Type application/x-www-form-urlencoded'],
  ])('a body sent as %s names the type it came with', async (_what, headers, got) => {
    const r = await send('{"a":1}', headers);
    expect(r.status).toBe(400);
    expect(r.body.message).toBe(`Request body must be JSON, sent with Content-Type: application/json (this one has ${got})`);
  });

  it('passes objects, arrays, a charset parameter and an empty body on', async () => {
    expect((await send('{"a":1}', { 'content-type': 'application/json; charset=utf-8' })).body).toEqual({ body: { a: 1 } });
    expect((await send('[1]', json)).body).toEqual({ body: [1] });
    expect((await send(undefined, {})).body).toEqual({ body: null });
  });
});
