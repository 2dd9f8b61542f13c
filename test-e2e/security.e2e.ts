import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { parseConfig, readEnv } from '@gateway/config';
import { startEmbedded } from '@gateway/gateway';
import { createLogger } from '@gateway/service-kit';
import { solidPng } from '@gateway/upstreams/testing';
import { waitFor } from '@gateway/testing';
import { hashSecret } from '@gateway/billing/testing';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { expectLedgerInvariants, type LedgerAccess, settled, startGateway, type TestGateway } from './support/harness';

/**
 * Security review, one point per describe, against the embedded gateway (its listener, its logs, its data
 * directory): keys at rest, the admin token and API keys kept apart, no upstream detail in what a client sees,
 * credentials never logged, smuggled requests refused, no fetch into the gateway's own network (webhooks and media
 * origins), and another account's ids answered exactly as unknown ones. security-fleet.e2e.ts runs the fleet's half.
 */

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** One call, read whole; `key` goes as Bearer unless `headers` say otherwise. */
async function call(
  base: string,
  method: string,
  p: string,
  opts: { key?: string; headers?: Record<string, string>; body?: unknown },
): Promise<Answer> {
  const r = await fetch(p.startsWith('http') ? p : `${base}${p}`, {
    method,
    headers: {
      ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    body: opts.body === undefined || method === 'GET' ? undefined : JSON.stringify(opts.body),
  });
  const text = await r.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
}

/** A port free right now (the gateway must know its public URL before it listens). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * Bytes written on a raw TCP connection, and what came back before the server closed it: the first response's head,
 * how many responses, whether it closed (a connection still open after 10 s is reported as not closed).
 */
async function rawExchange(target: URL, raw: string): Promise<{ head: string; responses: number; closed: boolean }> {
  return new Promise((resolve) => {
    let data = '';
    const socket = net.connect(Number(target.port), target.hostname, () => socket.write(raw));
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      resolve({ head: data.split('\r\n\r\n')[0], responses: (data.match(/^HTTP\/1\.[01] \d{3}/gm) ?? []).length, closed });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      finish(false);
    }, 10_000);
    socket.on('data', (d) => (data += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(true));
  });
}

/** A whole chat request carrying `marker`, as a smuggler would hide it behind the first one. */
function innerRequest(key: string, marker: string, eol = '\r\n'): string {
  const body = JSON.stringify({ model: 'sec/ok', messages: [{ role: 'user', content: marker }], max_tokens: 5 });
  return [
    'POST /v1/chat/completions HTTP/1.1',
    'Host: gateway',
    `Authorization: Bearer ${key}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join(eol);
}

/** Requests whose framing two HTTP parsers could read differently (RFC 9112 §6.3): each must be refused outright. */
const SMUGGLING: Record<string, (key: string, marker: string) => string> = {
  'Content-Length and Transfer-Encoding (CL.TE)': (key, marker) => {
    const body = `0\r\n\r\n${innerRequest(key, marker)}`;
    return `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`;
  },
  'Transfer-Encoding then Content-Length (TE.CL)': (key, marker) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\n${innerRequest(key, marker)}\r\n0\r\n\r\n`,
  'two Content-Length values': (key, marker) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 0\r\nContent-Length: 44\r\n\r\n${innerRequest(key, marker)}`,
  'a Content-Length list': (key, marker) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 0, 44\r\n\r\n${innerRequest(key, marker)}`,
  'Transfer-Encoding not ending in chunked': (key, marker) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n${innerRequest(key, marker)}`,
  'Transfer-Encoding with a space before the colon': (key, marker) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n${innerRequest(key, marker)}`,
  'bare LF line endings with both lengths': (key, marker) =>
    `POST /v1/chat/completions HTTP/1.1\nHost: gateway\nAuthorization: Bearer ${key}\nContent-Length: 5\nTransfer-Encoding: chunked\n\n0\n\n${innerRequest(key, marker, '\n')}`,
};

const PROVIDER_KEY_ENV = 'GW_SECURITY_E2E_PROVIDER_KEY';
const PROVIDER_KEY = `sk-provider-${crypto.randomBytes(12).toString('hex')}`;
/** Upstream names no answer may carry: distinctive, so a search for them cannot match anything else. */
const UPSTREAM = { alpha: 'upstream-alpha-7c1f', dead: 'upstream-dead-7c1f', rogue: 'upstream-rogue-7c1f' };
const DEAD_URL = 'http://127.0.0.1:9/v1';
/** An admin token shaped like an API key: it must still open nothing under /v1. */
const ADMIN_TOKEN = `sk_live_${crypto.randomBytes(36).toString('base64url').replace(/[-_]/g, 'A').slice(0, 48)}`;

/** A server on loopback standing for the gateway's own network: it counts every connection, which must stay 0. */
async function internalServer() {
  let connections = 0;
  const s = http.createServer((_req, res) => void res.end('INTERNAL-ONLY'));
  s.on('connection', () => connections++);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  return { port, connections: () => connections, close: () => new Promise<void>((r) => s.close(() => r())) };
}

/**
 * An OpenAI-kind image upstream whose answers link files anywhere: `own` on its own origin (served), and the others
 * at the internal server, the metadata address, through a redirect from its own origin, by name and as mapped IPv6.
 */
async function rogueImages(internalPort: number) {
  const png = solidPng(4, 4, [10, 20, 30]);
  const s = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/own.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (req.method === 'GET' && req.url === '/redirect.png')
      return void res.writeHead(302, { location: `http://127.0.0.1:${internalPort}/x.png` }).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const model = String(JSON.parse(Buffer.concat(chunks).toString() || '{}').model ?? '');
      const self = `http://${req.headers.host}`;
      const url: Record<string, string> = {
        own: `${self}/own.png`,
        internal: `http://127.0.0.1:${internalPort}/x.png`,
        localhost: `http://localhost:${internalPort}/x.png`,
        mapped: `http://[::ffff:127.0.0.1]:${internalPort}/x.png`,
        metadata: 'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
        private: 'http://10.0.0.1/x.png',
        redirect: `${self}/redirect.png`,
      };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ created: 1, data: [{ url: url[model] ?? url.own }] }));
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(s.address() as net.AddressInfo).port}/v1`, close: () => new Promise<void>((r) => s.close(() => r())) };
}

function securityConfig(alphaUrl: string, rogueUrl: string) {
  const ep = (provider: string, model: string) => ({ provider, model });
  const text = (id: string, endpoints: ReturnType<typeof ep>[]) => ({
    id,
    name: id,
    category: 'text',
    status: 'available',
    context_length: 4096,
    max_output_tokens: 20,
    pricing: { prompt: '0.001', completion: '0.002' },
    endpoints,
  });
  const image = (id: string, endpoints: ReturnType<typeof ep>[]) => ({
    id,
    name: id,
    category: 'image',
    status: 'available',
    pricing: { image: '0.01' },
    endpoints,
  });
  return {
    providers: [
      { id: UPSTREAM.alpha, kind: 'openai', base_url: alphaUrl, api_key_env: PROVIDER_KEY_ENV, timeout_ms: 10_000 },
      { id: UPSTREAM.dead, kind: 'openai', base_url: DEAD_URL, api_key_env: PROVIDER_KEY_ENV, timeout_ms: 400 },
      { id: UPSTREAM.rogue, kind: 'openai', base_url: rogueUrl, api_key_env: PROVIDER_KEY_ENV, timeout_ms: 10_000 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      text('sec/ok', [ep(UPSTREAM.alpha, 'ok')]),
      text('sec/failover', [ep(UPSTREAM.alpha, 'status-500'), ep(UPSTREAM.alpha, 'ok')]),
      text('sec/dead-first', [ep(UPSTREAM.dead, 'ok'), ep(UPSTREAM.alpha, 'ok')]),
      text('sec/all-fail', [ep(UPSTREAM.alpha, 'status-503'), ep(UPSTREAM.dead, 'ok')]),
      text('sec/client-error', [ep(UPSTREAM.alpha, 'status-400')]),
      text('sec/break', [ep(UPSTREAM.alpha, 'break-2')]),
      image('sec/image', [ep(UPSTREAM.alpha, 'images-url')]),
      ...['own', 'internal', 'localhost', 'mapped', 'metadata', 'private', 'redirect'].map((m) => image(`sec/img-${m}`, [ep(UPSTREAM.rogue, m)])),
      {
        id: 'sec/video',
        name: 'video',
        category: 'video',
        status: 'available',
        pricing: { second: '0.05' },
        endpoints: [ep('sim', 'sim-video-small')],
      },
    ],
    webhooks: { max_retries: 0, initial_backoff_ms: 50, allow_private_addresses: false },
    jobs: { poll_interval: '50ms', lease: '60s', timeout: '10m' },
  };
}

describe('security review (embedded gateway)', () => {
  let alpha: FakeUpstream;
  let internal: Awaited<ReturnType<typeof internalServer>>;
  let rogue: Awaited<ReturnType<typeof rogueImages>>;
  let gw: Awaited<ReturnType<typeof startEmbedded>> | undefined;
  let url: string;
  let dataDir: string;
  const logLines: string[] = [];
  const ledger: LedgerAccess = {
    ledger: async (sql, params) => {
      await gw!.ledgerFlushed();
      return (await gw!.billingDb.query(sql, params)) as any[];
    },
  };
  const admin = async (method: string, p: string, body?: unknown) => call(url, method, p, { key: ADMIN_TOKEN, body });
  type Account = { accountId: string; key: string; keyId: string };
  const account = async (credits = 10): Promise<Account> => {
    const a = await admin('POST', '/admin/v1/accounts', { credits });
    const k = await admin('POST', `/admin/v1/accounts/${a.json.data.account_id}/keys`, { label: 'security' });
    return { accountId: a.json.data.account_id, key: k.json.data.key, keyId: k.json.data.key_id };
  };
  let a: Account;
  let b: Account;

  beforeAll(async () => {
    process.env[PROVIDER_KEY_ENV] = PROVIDER_KEY;
    alpha = await startFakeOpenAI();
    internal = await internalServer();
    rogue = await rogueImages(internal.port);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-security-'));
    const destination = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    for (let attempt = 1; !gw; attempt++) {
      const port = await freePort();
      const env = readEnv({
        PORT: String(port),
        METRICS_PORT: '0',
        HOST: '127.0.0.1',
        GATEWAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        GATEWAY_DATA_DIR: dataDir,
        LOG_LEVEL: 'debug',
      });
      try {
        // The logger the gateway's own start makes (createLogger, with its redaction), writing where the test reads.
        gw = await startEmbedded(env, parseConfig(securityConfig(alpha.url, rogue.url)), createLogger('gateway', 'debug', destination), { dataDir });
      } catch (e) {
        if (attempt >= 3) throw e;
      }
    }
    url = gw.url;
    a = await account();
    b = await account();
  }, 90_000);

  afterEach(async () => {
    if (!gw) return;
    await settled(ledger);
    await expectLedgerInvariants(ledger);
  });

  afterAll(async () => {
    await gw?.stop();
    await Promise.all([alpha?.close(), internal?.close(), rogue?.close()]);
    delete process.env[PROVIDER_KEY_ENV];
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const chat = (key: string, model: string, extra: Record<string, unknown> = {}) =>
    call(url, 'POST', '/v1/chat/completions', { key, body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, ...extra } });

  describe('the admin token and API keys are never each other', () => {
    // Three items each: a row with fewer would hand the test jest's `done` callback as its last argument.
    const keyed: Array<[string, string, unknown]> = [
      ['GET', '/v1/key', undefined],
      ['GET', '/v1/credits', undefined],
      ['GET', '/v1/jobs', undefined],
      ['GET', '/v1/generation?id=req_x', undefined],
      ['GET', '/v1/generations', undefined],
      ['GET', '/v1/activity', undefined],
      ['POST', '/v1/chat/completions', { model: 'sec/ok', messages: [{ role: 'user', content: 'hi' }] }],
    ];

    it.each(keyed)(
      '%s %s refuses the admin token (shaped like an API key) as Bearer and as x-api-key: 401 invalid_api_key',
      async (method, p, body) => {
        const before = alpha.requests.length;
        for (const headers of [{ authorization: `Bearer ${ADMIN_TOKEN}` }, { 'x-api-key': ADMIN_TOKEN }] as Record<string, string>[]) {
          const r = await call(url, method, p, { headers, body });
          expect({ p, headers: Object.keys(headers), status: r.status, code: r.json?.error?.code }).toEqual({
            p,
            headers: Object.keys(headers),
            status: 401,
            code: 'invalid_api_key',
          });
        }
        expect(alpha.requests.length).toBe(before);
      },
    );

    it('/admin/v1 refuses an API key, as Bearer and as x-api-key, and answers the admin token', async () => {
      for (const [method, p] of [
        ['GET', `/admin/v1/accounts/${a.accountId}`],
        ['POST', `/admin/v1/accounts/${a.accountId}/credits`],
        ['POST', `/admin/v1/accounts/${a.accountId}/keys`],
        ['POST', `/admin/v1/accounts/${a.accountId}/webhook-secret`],
        ['POST', '/admin/v1/accounts'],
        ['GET', '/admin/v1/accounts'],
        ['GET', `/admin/v1/accounts?search=${a.accountId}`],
      ]) {
        for (const headers of [{ authorization: `Bearer ${a.key}` }, { 'x-api-key': a.key }] as Record<string, string>[]) {
          const r = await call(url, method, p, { headers, body: { amount: 100 } });
          expect({ p, status: r.status, code: r.json?.error?.code }).toEqual({ p, status: 401, code: 'invalid_api_key' });
        }
      }
      expect((await admin('GET', `/admin/v1/accounts/${a.accountId}`)).json.data.total_credits).toBe(10);
    });
  });

  describe('no upstream name, address or provider key reaches a client', () => {
    /** Everything a client can see of an answer, as text: status line, every header, the body. */
    const visible = (r: Answer) => `${r.status}\n${[...r.headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${r.text}`;
    const forbidden = () => [
      PROVIDER_KEY,
      ...Object.values(UPSTREAM),
      new URL(alpha.url).host,
      new URL(rogue.url).host,
      new URL(DEAD_URL).host,
      `127.0.0.1:${internal.port}`,
    ];
    const expectClean = (what: string, text: string) => {
      for (const f of forbidden()) expect({ what, leaks: text.includes(f) ? f : null }).toEqual({ what, leaks: null });
      // The upstream's own words reach a client only where docs/api-notes.md says: its refusal of the client's mistake.
      if (what !== "the upstream's 400") expect({ what, upstreamText: text.includes('fake upstream says') }).toEqual({ what, upstreamText: false });
    };

    it('in answers and headers, on success, failover, failure, a broken stream, the upstream’s 400, and the media served', async () => {
      const answers: Array<[string, Answer]> = [
        ['ok', await chat(a.key, 'sec/ok')],
        ['ok streamed', await chat(a.key, 'sec/ok', { stream: true })],
        ['failover after a 500', await chat(a.key, 'sec/failover')],
        ['failover after a dead host', await chat(a.key, 'sec/dead-first')],
        ['every endpoint failing', await chat(a.key, 'sec/all-fail')],
        ['every endpoint failing, streamed', await chat(a.key, 'sec/all-fail', { stream: true })],
        ["the upstream's 400", await chat(a.key, 'sec/client-error')],
        ['a stream that breaks', await chat(a.key, 'sec/break', { stream: true })],
      ];
      expect(answers.map(([w, r]) => [w, r.status])).toEqual([
        ['ok', 200],
        ['ok streamed', 200],
        ['failover after a 500', 200],
        ['failover after a dead host', 200],
        ['every endpoint failing', 503],
        ['every endpoint failing, streamed', 503],
        ["the upstream's 400", 400],
        ['a stream that breaks', 200],
      ]);
      const img = await call(url, 'POST', '/v1/images/generations', { key: a.key, body: { model: 'sec/image', prompt: 'a lighthouse', n: 1 } });
      expect(img.status).toBe(200);
      answers.push(['image generation', img], ['image file', await call(url, 'GET', img.json.data[0].url, { key: a.key })]);
      const id = answers[0][1].headers.get('x-gateway-request-id');
      answers.push(['generation record', await call(url, 'GET', `/v1/generation?id=${id}`, { key: a.key })]);
      expect(answers.at(-1)![1].status).toBe(200);
      // One place names a provider, by design: the generation record's `provider`, the id clients route by (the
      // `provider` preferences, docs/api-notes.md). Only there, and never its address or key.
      const record = answers.at(-1)![1];
      expect(record.json.data.provider).toBe(UPSTREAM.alpha);
      const published = `"provider":"${UPSTREAM.alpha}"`;
      expect(record.text.split(published).length).toBe(2);
      for (const [what, r] of answers) expectClean(what, visible(r === record ? { ...r, text: r.text.replace(published, '') } : r));
      // The provider's key did travel, to the provider's API only (the search above was for something real); the
      // file fetched from its origin went without it.
      const calls = alpha.requests.filter((r) => r.model !== '');
      const files = alpha.requests.filter((r) => r.model === '');
      expect(calls.length).toBeGreaterThan(0);
      expect(files.length).toBeGreaterThan(0);
      expect(new Set(calls.map((r) => r.headers.authorization))).toEqual(new Set([`Bearer ${PROVIDER_KEY}`]));
      expect(files.map((r) => r.headers.authorization ?? null)).toEqual(files.map(() => null));
    });

    it('in the metrics (an internal listener only) and the log lines: no provider key, client key or upstream address', async () => {
      expect((await call(url, 'GET', '/metrics', {})).status).toBe(404); // not on the public listener
      const metrics = await (await fetch(`${gw!.metricsUrl}/metrics`)).text();
      expect(metrics).toMatch(/^# HELP/m);
      for (const f of [PROVIDER_KEY, a.key, ADMIN_TOKEN, new URL(alpha.url).host, new URL(rogue.url).host])
        expect({ metrics: f, found: metrics.includes(f) }).toEqual({ metrics: f, found: false });
      const logs = logLines.join('');
      expect(logs.length).toBeGreaterThan(0);
      for (const f of [PROVIDER_KEY, a.key, b.key, ADMIN_TOKEN])
        expect({ logs: f.slice(0, 12), found: logs.includes(f) }).toEqual({ logs: f.slice(0, 12), found: false });
    });
  });

  describe('SSRF: nothing is fetched from the gateway’s own network', () => {
    it('a generated file whose origin is loopback, private, link-local (metadata), mapped IPv6 or a redirect there answers 503, naming nothing; the internal server is never reached', async () => {
      const before = internal.connections();
      for (const m of ['internal', 'localhost', 'mapped', 'metadata', 'private', 'redirect']) {
        const gen = await call(url, 'POST', '/v1/images/generations', { key: a.key, body: { model: `sec/img-${m}`, prompt: 'x' } });
        expect({ m, status: gen.status }).toEqual({ m, status: 200 });
        const file = await call(url, 'GET', gen.json.data[0].url, { key: a.key });
        expect({ m, status: file.status, code: file.json?.error?.code, message: file.json?.error?.message }).toEqual({
          m,
          status: 503,
          code: 'upstream_unavailable',
          message: expect.stringMatching(/^The origin of file file_[a-z0-9]{24} did not answer; try again shortly$/),
        });
      }
      expect(internal.connections()).toBe(before);
      // The provider's own origin is the operator's choice and is served, loopback or not.
      const own = await call(url, 'POST', '/v1/images/generations', { key: a.key, body: { model: 'sec/img-own', prompt: 'x' } });
      const bytes = await call(url, 'GET', own.json.data[0].url, { key: a.key });
      expect([bytes.status, bytes.headers.get('content-type')]).toEqual([200, 'image/png']);
    });

    it('webhook_url: http is refused at submit; loopback, private, link-local, unique-local and mapped IPv6 targets are refused at delivery, never connected to', async () => {
      const secret = (await admin('POST', `/admin/v1/accounts/${a.accountId}/webhook-secret`)).json.data.secret as string;
      expect(secret).toMatch(/^whsec_/);
      let connections = 0;
      const listener = net.createServer((s) => {
        connections++;
        s.destroy();
      });
      await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
      const port = (listener.address() as net.AddressInfo).port;
      try {
        const plain = await call(url, 'POST', '/v1/queue/sec/video', {
          key: a.key,
          body: { prompt: 'x', duration: 1, webhook_url: `http://127.0.0.1:${port}/hook` },
        });
        expect([plain.status, plain.json?.error?.code]).toEqual([400, 'invalid_request']);

        const targets: Array<[string, string]> = [
          [`https://127.0.0.1:${port}/hook`, '127.0.0.1'],
          [`https://localhost:${port}/hook`, '127.0.0.1|::1'],
          [`https://[::ffff:127.0.0.1]:${port}/hook`, '::ffff:7f00:1|::ffff:127.0.0.1'],
          [`https://[::1]:${port}/hook`, '::1'],
          ['https://169.254.169.254/latest/meta-data/', '169.254.169.254'],
          ['https://10.0.0.1/hook', '10.0.0.1'],
          ['https://[fd00::1]/hook', 'fd00::1'],
          ['https://[::ffff:a9fe:a9fe]/hook', '::ffff:a9fe:a9fe|::ffff:169.254.169.254'],
        ];
        const jobs: Array<[string, string, string]> = [];
        for (const [target, address] of targets) {
          const sub = await call(url, 'POST', '/v1/queue/sec/video', { key: a.key, body: { prompt: 'hook', duration: 1, webhook_url: target } });
          expect({ target, status: sub.status }).toEqual({ target, status: 200 });
          jobs.push([target, address, sub.json.request_id]);
        }
        const refusal = (job: string) =>
          logLines.map((l) => JSON.parse(l)).find((l) => l.job === job && l.msg === 'webhook delivery failed: no retries left');
        await waitFor(() => jobs.every(([, , job]) => refusal(job) !== undefined), 'every webhook delivery to give up', 20_000);
        for (const [target, address, job] of jobs) {
          const line = refusal(job);
          expect({ target, error: line.error }).toEqual({
            target,
            error: expect.stringMatching(new RegExp(`resolves to (${address}), which is not a public address`)),
          });
        }
        expect(connections).toBe(0);
        // The webhook secret signs deliveries; no log line carries it.
        expect(logLines.join('').includes(secret)).toBe(false);
      } finally {
        await new Promise<void>((r) => listener.close(() => r()));
      }
    }, 60_000);
  });

  describe("another account's ids answer exactly as unknown ones", () => {
    /** An answer with every occurrence of `id` replaced, and the per-request id dropped: what must not differ. */
    const shape = (r: Answer, id: string) => ({
      status: r.status,
      body: r.text
        .split(id)
        .join('<id>')
        .replace(/req_[a-z0-9]+/g, '<request>'),
    });
    const randomOfShape = (id: string) =>
      id.replace(/(?<=_)[a-z0-9]+$/, (s) => [...s].map(() => 'abcdefghijklmnopqrstuvwxyz0123456789'[crypto.randomInt(36)]).join(''));

    it('generation, queue status, result and cancel, videos, video content, files, and the job list cursor', async () => {
      // Account a's things: a generation, an image file, a finished video job.
      const gen = (await chat(a.key, 'sec/ok')).headers.get('x-gateway-request-id')!;
      const file = (await call(url, 'POST', '/v1/images/generations', { key: a.key, body: { model: 'sec/image', prompt: 'mine' } })).json.data[0].url
        .split('/')
        .at(-1);
      const job = (await call(url, 'POST', '/v1/queue/sec/video', { key: a.key, body: { prompt: 'mine', duration: 1 } })).json.request_id as string;
      await waitFor(
        async () => (await call(url, 'GET', `/v1/queue/requests/${job}/status`, { key: a.key })).json?.status === 'COMPLETED',
        'the job to finish',
        20_000,
      );
      expect((await call(url, 'GET', `/v1/videos/${job}/content`, { key: a.key })).status).toBe(200);
      const second = (await call(url, 'POST', '/v1/queue/sec/video', { key: a.key, body: { prompt: 'mine too', duration: 1 } })).json
        .request_id as string;
      await waitFor(
        async () => (await call(url, 'GET', `/v1/queue/requests/${second}/status`, { key: a.key })).json?.status === 'COMPLETED',
        'the second job to finish',
        20_000,
      );
      const cursor = (await call(url, 'GET', '/v1/jobs?limit=1', { key: a.key })).json.next_cursor as string;
      expect(cursor).toEqual(expect.any(String));

      const routes: Array<[string, string, (id: string) => string]> = [
        [gen, 'GET', (id) => `/v1/generation?id=${id}`],
        [job, 'GET', (id) => `/v1/queue/requests/${id}/status`],
        [job, 'GET', (id) => `/v1/queue/sec/video/requests/${id}/status`],
        [job, 'GET', (id) => `/v1/queue/requests/${id}`],
        [job, 'PUT', (id) => `/v1/queue/requests/${id}/cancel`],
        [job, 'GET', (id) => `/v1/videos/${id}`],
        [job, 'GET', (id) => `/v1/videos/${id}/content`],
        [file, 'GET', (id) => `/v1/files/${id}`],
      ];
      for (const [id, method, route] of routes) {
        const unknown = randomOfShape(id);
        const foreign = await call(url, method, route(id), { key: b.key });
        const never = await call(url, method, route(unknown), { key: b.key });
        expect({ route: route('<id>'), ...shape(foreign, id) }).toEqual({ route: route('<id>'), ...shape(never, unknown) });
        expect({ route: route('<id>'), status: foreign.status }).toEqual({ route: route('<id>'), status: 404 });
      }
      // The listings are the caller's own: b's calls never show a's generation.
      const bList = await call(url, 'GET', '/v1/generations?limit=200', { key: b.key });
      expect({ status: bList.status, hasA: bList.text.includes(gen) }).toEqual({ status: 200, hasA: false });
      // The cursor is a position (created_at, id), not a lookup: another account's and a made-up one at the same
      // instant list the same rows (b's own), so neither tells whether the id exists.
      const [at] = Buffer.from(cursor, 'base64url').toString().split('|');
      const madeUp = Buffer.from(`${at}|${randomOfShape(second)}`).toString('base64url');
      const viaForeign = await call(url, 'GET', `/v1/jobs?cursor=${cursor}`, { key: b.key });
      const viaMadeUp = await call(url, 'GET', `/v1/jobs?cursor=${madeUp}`, { key: b.key });
      expect(viaForeign.status).toBe(200);
      expect({ status: viaForeign.status, body: viaForeign.json }).toEqual({ status: viaMadeUp.status, body: viaMadeUp.json });
      // And a's things are untouched by b's cancel.
      expect((await call(url, 'GET', `/v1/queue/requests/${job}`, { key: a.key })).json.outcome).toBe('succeeded');
    }, 60_000);
  });

  describe('request smuggling on the public listener', () => {
    it.each(Object.keys(SMUGGLING))('%s: 400 and the connection closed; nothing reaches the upstream, nothing is held', async (name) => {
      const marker = `smuggled-${crypto.randomBytes(6).toString('hex')}`;
      const before = alpha.requests.length;
      const holds = (await ledger.ledger('SELECT count(*)::int AS n FROM holds WHERE account_id = $1', [b.accountId]))[0].n;
      const r = await rawExchange(new URL(url), SMUGGLING[name](b.key, marker));
      expect({ status: r.head.split('\r\n')[0], closed: r.closed, responses: r.responses }).toEqual({
        status: 'HTTP/1.1 400 Bad Request',
        closed: true,
        responses: 1,
      });
      expect(alpha.requests.length).toBe(before);
      expect((await ledger.ledger('SELECT count(*)::int AS n FROM holds WHERE account_id = $1', [b.accountId]))[0].n).toBe(holds);
    });
  });

  describe('keys at rest', () => {
    it('no raw API key, admin token or provider key is in the data directory (every database, the ledger journal, media); their digests are', async () => {
      await gw!.stop(); // every database closed and on disk
      gw = undefined;
      const files: string[] = [];
      const walk = (dir: string) => {
        for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
          const p = path.join(dir, e.name);
          if (e.isDirectory()) walk(p);
          else if (e.isFile()) files.push(p);
        }
      };
      walk(dataDir);
      expect(files.length).toBeGreaterThan(10);
      const holding = (needle: string) => files.filter((f) => fs.readFileSync(f).includes(Buffer.from(needle))).map((f) => path.relative(dataDir, f));
      for (const [what, raw] of [
        ["account a's key", a.key],
        ["account b's key", b.key],
        ['the admin token', ADMIN_TOKEN],
        ['the provider key', PROVIDER_KEY],
      ])
        expect({ what, files: holding(raw) }).toEqual({ what, files: [] });
      // The scan reads what the databases wrote: each key's SHA-256 is there.
      expect(holding(hashSecret(a.key)).length).toBeGreaterThan(0);
      expect(holding(hashSecret(b.key)).length).toBeGreaterThan(0);
    });
  });
});

describe('security review (fleet: the edge in front of the services)', () => {
  let alpha: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };

  beforeAll(async () => {
    process.env[PROVIDER_KEY_ENV] = PROVIDER_KEY;
    alpha = await startFakeOpenAI();
    gw = await startGateway('fleet', securityConfig(alpha.url, DEAD_URL));
    acct = await gw.account(10);
  }, 120_000);

  afterEach(async () => {
    await settled(gw);
    await expectLedgerInvariants(gw);
  });

  afterAll(async () => {
    await gw?.stop();
    await alpha?.close();
    delete process.env[PROVIDER_KEY_ENV];
  });

  it.each(Object.keys(SMUGGLING))(
    '%s at the edge: 400 and the connection closed; nothing reaches a service or the upstream, nothing is held',
    async (name) => {
      const before = alpha.requests.length;
      const holds = (await gw.ledger('SELECT count(*)::int AS n FROM holds WHERE account_id = $1', [acct.accountId]))[0].n;
      const r = await rawExchange(new URL(gw.url), SMUGGLING[name](acct.key, `smuggled-${crypto.randomBytes(6).toString('hex')}`));
      expect({ status: r.head.split('\r\n')[0], closed: r.closed, responses: r.responses }).toEqual({
        status: 'HTTP/1.1 400 Bad Request',
        closed: true,
        responses: 1,
      });
      expect(alpha.requests.length).toBe(before);
      expect((await gw.ledger('SELECT count(*)::int AS n FROM holds WHERE account_id = $1', [acct.accountId]))[0].n).toBe(holds);
    },
  );

  it('the admin token opens no /v1 route and an API key no /admin/v1 route', async () => {
    for (const headers of [{ authorization: `Bearer ${gw.adminToken}` }, { 'x-api-key': gw.adminToken }] as Record<string, string>[]) {
      for (const p of ['/v1/key', '/v1/credits', '/v1/generations', '/v1/activity']) {
        const r = await call(gw.url, 'GET', p, { headers });
        expect({ p, status: r.status, code: r.json?.error?.code }).toEqual({ p, status: 401, code: 'invalid_api_key' });
      }
    }
    for (const headers of [{ authorization: `Bearer ${acct.key}` }, { 'x-api-key': acct.key }] as Record<string, string>[]) {
      for (const p of [`/admin/v1/accounts/${acct.accountId}`, '/admin/v1/accounts', `/admin/v1/accounts?search=${acct.accountId}`]) {
        const r = await call(gw.url, 'GET', p, { headers });
        expect({ p, status: r.status, code: r.json?.error?.code }).toEqual({ p, status: 401, code: 'invalid_api_key' });
      }
    }
  });

  it("no raw API key or provider key in any table of any service's schema; the key's digest is in billing's", async () => {
    const r = await call(gw.url, 'POST', '/v1/chat/completions', {
      key: acct.key,
      body: { model: 'sec/ok', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
    });
    expect(r.status).toBe(200);
    await settled(gw);
    const tables = await gw.ledger(
      `SELECT table_schema AS s, table_name AS t FROM information_schema.tables
        WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    expect(tables.map((x) => x.s)).toEqual(expect.arrayContaining(['billing', 'jobs', 'media']));
    const holding = async (needle: string) => {
      const found: string[] = [];
      for (const { s, t } of tables) {
        const [row] = await gw.ledger(`SELECT count(*)::int AS n FROM "${s}"."${t}" x WHERE x::text LIKE '%' || $1 || '%'`, [needle]);
        if (row.n > 0) found.push(`${s}.${t}`);
      }
      return found;
    };
    expect({ key: await holding(acct.key), provider: await holding(PROVIDER_KEY), admin: await holding(gw.adminToken) }).toEqual({
      key: [],
      provider: [],
      admin: [],
    });
    expect(await holding(hashSecret(acct.key))).toEqual(['billing.api_keys']);
  });
});
