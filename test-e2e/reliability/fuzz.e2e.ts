import fc from 'fast-check';
import { DEFAULT_CONFIG } from '@gateway/config';
import { holdCount, type TestGateway, useGatewaySuite } from '../support/harness';
import { rawExchange, rawRequest } from './support/raw-http';
import { type Answer, Tally, answerOf, expectMcpRefusal, expectRefusal } from './support/refusals';
import { BODY_ROUTES, type BodyRoute, fuzzConfig, withoutControls, invalidUtf8, withRawField, wrongShape, wrongTypes } from './support/routes';

/**
 * Input fuzzing of every public route of one gateway, embedded and then the fleet (whose edge passes bodies on
 * unread to the service that parses them): generated bodies of wrong shapes and types, past the
 * size limit, nested thousands deep, under wrong content types and encodings, with invalid UTF-8 and duplicate keys;
 * bad credentials, unknown ids, junk queries, header floods and malformed HTTP. Every answer must be a 4xx in the
 * spec's envelope carrying its request id (never a 5xx, never silence), nothing may be held for the fuzzing account,
 * and after each batch a valid chat call of another account is still served. FUZZ_SEED replays a failing run.
 */

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
const runs = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, ...(seed === undefined ? {} : { seed }) });

describe.each(['embedded', 'fleet'] as const)('input fuzzing of every public route of the %s gateway', (mode) => {
  let gw: TestGateway;
  /** Spends in the controls and the liveness calls; the fuzzing account never may. */
  let probe: { accountId: string; key: string };
  let fuzz: { accountId: string; key: string; keyId: string };
  const tally = new Tally();
  /** The fuzzing account's holds when the test began: a test that placed one fails on its own, not its successors. */
  let holdsBefore = 0;

  useGatewaySuite(mode, { upstreams: async () => ({ close: async () => undefined }), config: () => fuzzConfig(DEFAULT_CONFIG), credits: 20 }, (s) => {
    gw = s.gw;
    probe = s.acct;
  });
  beforeAll(async () => {
    // Its meter is out of reach, so a refusal is always the input's, never a 429.
    fuzz = await gw.account(5, { rate_limit: { requests: 1_000_000, interval: '60s' } });
  });
  beforeEach(async () => {
    if (fuzz) holdsBefore = await holdCount(gw, fuzz.accountId);
  });
  afterAll(() => {
    tally.report(mode === 'embedded' ? 'gateway-fuzz' : `gateway-fuzz-${mode}`);
  });

  const host = () => new URL(gw.url).host;

  /** A request of the fuzzing account with the body as bytes, so no content type is added unless given. */
  async function send(
    route: { method: string; path: string; mcp?: boolean },
    body: Buffer | string | undefined,
    headers: Record<string, string> = {},
  ) {
    const res = await fetch(`${gw.url}${route.path}`, {
      method: route.method,
      headers: { authorization: `Bearer ${fuzz.key}`, ...(route.mcp ? { accept: 'application/json, text/event-stream' } : {}), ...headers },
      body: body === undefined ? undefined : new Uint8Array(typeof body === 'string' ? Buffer.from(body) : body),
    });
    return answerOf(res);
  }

  const json = { 'content-type': 'application/json' };
  const refused = (route: { mcp?: boolean }, a: Answer, what: string, statuses?: number[]) =>
    route.mcp && !statuses ? expectMcpRefusal(a, what) : expectRefusal(a, what, statuses);

  /** After each batch: the process still serves a valid call, and the fuzzing account never had a hold. */
  async function stillServingAndNothingHeld() {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${probe.key}`, ...json },
      body: JSON.stringify({ model: 'demo/chat-small', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 5 }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).object).toBe('chat.completion');
    expect(await holdCount(gw, fuzz.accountId)).toBe(holdsBefore);
  }

  it('controls: every route accepts its valid body as JSON, so each refusal below is the mutation’s doing', async () => {
    for (const route of BODY_ROUTES) {
      const res = await fetch(`${gw.url}${route.path}`, {
        method: route.method,
        headers: { authorization: `Bearer ${probe.key}`, ...json, ...(route.mcp ? { accept: 'application/json, text/event-stream' } : {}) },
        body: JSON.stringify(route.valid),
      });
      const text = await res.text();
      expect({ route: route.name, accepted: res.status === 200 || res.status === 202 }).toEqual({ route: route.name, accepted: true });
      if (route.mcp) expect(res.headers.get('mcp-session-id')).toBeTruthy();
      // Jobs are cancelled at once, which releases their holds: the suite's ledger checks wait for no open hold.
      const job = /"request_id":"(job_[a-z0-9]+)"/.exec(text)?.[1];
      if (job) {
        const cancel = await fetch(`${gw.url}/v1/queue/requests/${job}/cancel`, { method: 'PUT', headers: { authorization: `Bearer ${probe.key}` } });
        expect(cancel.status).toBe(200);
      }
    }
  }, 60_000);

  it('a body that is not a JSON object (array, string, number, null, any JSON value) is refused 400 in the envelope on every route', async () => {
    for (const route of BODY_ROUTES) {
      await fc.assert(
        fc.asyncProperty(wrongShape, async (value) => {
          tally.add(route.name, 'shape');
          const what = `${route.name} ${JSON.stringify(value).slice(0, 200)}`;
          refused(route, await send(route, JSON.stringify(value), json), what, route.mcp ? undefined : [400]);
        }),
        runs(12),
      );
    }
    await stillServingAndNothingHeld();
  }, 60_000);

  it('fields of the wrong type under the right names (beside __proto__, constructor and other awkward keys) are refused in the envelope, nothing held', async () => {
    for (const route of BODY_ROUTES) {
      await fc.assert(
        fc.asyncProperty(wrongTypes(route), async (body) => {
          tally.add(route.name, 'types');
          refused(route, await send(route, JSON.stringify(body), json), `${route.name} ${JSON.stringify(body).slice(0, 300)}`);
        }),
        runs(25),
      );
    }
    await stillServingAndNothingHeld();
  }, 90_000);

  it('a body past the size limit answers 413 in the envelope, sent with a length or chunked, and nothing is held', async () => {
    for (const route of BODY_ROUTES) {
      const keys = [...Object.keys(route.checked), 'x'];
      const huge = fc.record({
        bytes: fc.integer({ min: route.limit + 1, max: route.limit * 3 }),
        kind: fc.constantFrom('string', 'array'),
        key: fc.constantFrom(...keys),
        chunked: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(huge, async ({ bytes, kind, key, chunked }) => {
          tally.add(route.name, 'size');
          const value = kind === 'string' ? `"${'x'.repeat(bytes)}"` : `[${'0,'.repeat(Math.ceil(bytes / 2))}0]`;
          const body = withRawField(route, key, value);
          const headers: Array<[string, string]> = [
            ['Authorization', `Bearer ${fuzz.key}`],
            ['Content-Type', 'application/json'],
          ];
          const a = await rawExchange(gw.url, rawRequest({ method: route.method, path: route.path, host: host(), headers, body, chunked }));
          expectRefusal(a, `${route.name} ${key}: ${kind} of ${bytes} bytes${chunked ? ', chunked' : ''}`, [413]);
        }),
        runs(4),
      );
    }
    await stillServingAndNothingHeld();
  }, 90_000);

  it('nesting 1,000 to 10,000 levels deep, as the whole body or in any field, is refused 400 and the process keeps serving', async () => {
    for (const route of BODY_ROUTES) {
      const deep = fc.record({
        depth: fc.oneof(fc.constant(10_000), fc.integer({ min: 1_000, max: 10_000 })),
        kind: fc.constantFrom('array', 'object'),
        where: fc.constantFrom('body', ...Object.keys(route.valid), 'metadata', 'tools', 'x'),
      });
      await fc.assert(
        fc.asyncProperty(deep, async ({ depth, kind, where }) => {
          tally.add(route.name, 'depth');
          const nested = kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}0${'}'.repeat(depth)}`;
          const body = where === 'body' ? nested : withRawField(route, where, nested);
          const a = await send(route, body, json);
          refused(route, a, `${route.name}: ${kind} nested ${depth} deep in ${where}`, route.mcp ? undefined : [400]);
        }),
        runs(5),
      );
    }
    await stillServingAndNothingHeld();
  }, 90_000);

  /** The route's valid body, as the content type says it is sent. */
  function encodeAs(route: BodyRoute, type: string | undefined): Buffer {
    const flat = Object.entries(route.valid).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)] as const);
    if (type === 'application/x-www-form-urlencoded') return Buffer.from(new URLSearchParams(flat.map(([k, v]) => [k, v])).toString());
    if (type?.startsWith('multipart/form-data'))
      return Buffer.from(`${flat.map(([k, v]) => `--fuzz\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('')}--fuzz--\r\n`);
    if (type === 'application/xml') return Buffer.from(`<request>${flat.map(([k, v]) => `<${k}>${v}</${k}>`).join('')}</request>`);
    return Buffer.from(JSON.stringify(route.valid));
  }

  it('a valid body under a content type that is not JSON (text/plain, a form, multipart, none, XML, another charset) is refused 400, never read as JSON', async () => {
    const types = fc.constantFrom(
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=fuzz',
      undefined,
      'application/xml',
      'application/octet-stream',
      'text/html; charset=utf-8',
      'application/json; charset=iso-8859-1',
      'application/json; charset=utf-16',
    );
    // /v1/mcp reads any content type as JSON-RPC by design (its own parser answers a body that is not JSON).
    for (const route of BODY_ROUTES.filter((r) => !r.mcp)) {
      await fc.assert(
        fc.asyncProperty(types, async (type) => {
          tally.add(route.name, 'content-type');
          const a = await send(route, encodeAs(route, type), type === undefined ? {} : { 'content-type': type });
          expectRefusal(a, `${route.name} as ${type ?? 'no content type'}`, [400]);
        }),
        runs(9),
      );
    }
    await stillServingAndNothingHeld();
  }, 60_000);

  it('a JSON body under a Content-Encoding it is not in (gzip, deflate, br, unknown) is refused 400 in the envelope', async () => {
    const encodings = fc.constantFrom('gzip', 'deflate', 'br', 'x-unknown', 'gzip, gzip', 'compress');
    for (const route of BODY_ROUTES) {
      await fc.assert(
        fc.asyncProperty(encodings, async (encoding) => {
          tally.add(route.name, 'content-encoding');
          const a = await send(route, JSON.stringify(route.valid), { ...json, 'content-encoding': encoding });
          expectRefusal(a, `${route.name} said to be ${encoding}`, [400]);
        }),
        runs(6),
      );
    }
    await stillServingAndNothingHeld();
  }, 60_000);

  it('invalid UTF-8 inside a string of an otherwise valid body is refused 400, never replaced, forwarded or billed', async () => {
    for (const route of BODY_ROUTES) {
      const text = JSON.stringify(route.valid);
      const at = text.indexOf(route.textField);
      expect(at).toBeGreaterThan(0);
      await fc.assert(
        fc.asyncProperty(invalidUtf8, fc.integer({ min: 0, max: route.textField.length }), async (bad, offset) => {
          tally.add(route.name, 'utf8');
          const body = Buffer.concat([Buffer.from(text.slice(0, at + offset)), bad, Buffer.from(text.slice(at + offset))]);
          const a = await send(route, body, json);
          expectRefusal(a, `${route.name} with bytes ${bad.toString('hex')} in "${route.textField}"`, [400]);
        }),
        runs(8),
      );
    }
    await stillServingAndNothingHeld();
  }, 60_000);

  it('a NUL character (\\u0000) in a string or a key of a body is refused 400, before a database that cannot store it fails', async () => {
    const where = fc.record({ inKey: fc.boolean(), offset: fc.nat(), repeat: fc.integer({ min: 1, max: 3 }) });
    for (const route of BODY_ROUTES) {
      const text = JSON.stringify(route.valid);
      const at = text.indexOf(route.textField);
      await fc.assert(
        fc.asyncProperty(where, async ({ inKey, offset, repeat }) => {
          tally.add(route.name, 'nul');
          const nul = '\\u0000'.repeat(repeat);
          const cut = at + (offset % (route.textField.length + 1));
          const body = inKey ? `${text.slice(0, -1)},"x${nul}":1}` : `${text.slice(0, cut)}${nul}${text.slice(cut)}`;
          expectRefusal(await send(route, body, json), `${route.name} ${body.slice(0, 200)}`, [400]);
        }),
        runs(5),
      );
    }
    // The admin API's bodies too (with the right token): a key's label is stored as text.
    const label = await gw.admin('POST', `/admin/v1/accounts/${fuzz.accountId}/keys`, { label: 'a\u0000b' });
    tally.add('POST /admin/v1/accounts/{account_id}/keys', 'nul');
    expect({ status: label.status, code: label.json?.error?.code }).toEqual({ status: 400, code: 'invalid_request' });
    await stillServingAndNothingHeld();
  }, 60_000);

  it('duplicate keys: the last one decides, so a wrong value after a valid one is refused', async () => {
    for (const route of BODY_ROUTES) {
      const names = Object.keys(route.checked);
      const dup = fc.constantFrom(...names).chain((name) => fc.tuple(fc.constant(name), route.checked[name].wrong));
      await fc.assert(
        fc.asyncProperty(dup, async ([name, bad]) => {
          tally.add(route.name, 'duplicate-keys');
          const text = JSON.stringify({ ...route.valid, [name]: route.checked[name].valid });
          const body = `${text.slice(0, -1)},${JSON.stringify(name)}:${JSON.stringify(bad)}}`;
          refused(route, await send(route, body, json), `${route.name} ${body.slice(0, 300)}`);
        }),
        runs(8),
      );
    }
    await stillServingAndNothingHeld();
  }, 60_000);

  /** Every keyed route, each with a method it serves. */
  const KEYED: Array<{ name: string; method: string; path: string; mcp?: boolean }> = [
    ...BODY_ROUTES.map((r) => ({ name: r.name, method: r.method, path: r.path, mcp: r.mcp })),
    { name: 'GET /v1/key', method: 'GET', path: '/v1/key' },
    { name: 'GET /v1/credits', method: 'GET', path: '/v1/credits' },
    { name: 'GET /v1/generation', method: 'GET', path: '/v1/generation?id=req_x' },
    { name: 'GET /v1/generations', method: 'GET', path: '/v1/generations' },
    { name: 'GET /v1/activity', method: 'GET', path: '/v1/activity' },
    { name: 'GET /v1/jobs', method: 'GET', path: '/v1/jobs' },
    { name: 'GET /v1/files/{id}', method: 'GET', path: '/v1/files/file_x' },
    { name: 'GET /v1/videos/{id}', method: 'GET', path: '/v1/videos/job_x' },
    { name: 'GET /v1/videos/{id}/content', method: 'GET', path: '/v1/videos/job_x/content' },
    { name: 'GET /v1/queue/requests/{id}/status', method: 'GET', path: '/v1/queue/requests/job_x/status' },
    { name: 'GET /v1/queue/requests/{id}', method: 'GET', path: '/v1/queue/requests/job_x' },
    { name: 'GET /v1/queue/{model}/requests/{id}', method: 'GET', path: '/v1/queue/demo/video-small/requests/job_x' },
    { name: 'PUT /v1/queue/requests/{id}/cancel', method: 'PUT', path: '/v1/queue/requests/job_x/cancel' },
    { name: 'GET /v1/mcp', method: 'GET', path: '/v1/mcp' },
    { name: 'DELETE /v1/mcp', method: 'DELETE', path: '/v1/mcp' },
  ];

  it('a missing, malformed, unknown or altered key is refused 401 in the envelope on every keyed route', async () => {
    // Control characters are malformed HTTP, refused before any key is read (the malformed-HTTP test has them).
    const text = fc.string({ maxLength: 80, unit: 'binary' }).map(withoutControls);
    const altered = fc.integer({ min: 0, max: 60 }).chain((i) =>
      fc.constantFrom(
        (k: string) => k.slice(0, i),
        (k: string) => `${k}${'x'.repeat(i + 1)}`,
        (k: string) => k.slice(0, i) + (k[i] === 'A' ? 'B' : 'A') + k.slice(i + 1),
        (k: string) => k.toUpperCase(),
      ),
    );
    const credential = fc.oneof(
      fc.constant<Array<[string, string]>>([]),
      text.map((s): Array<[string, string]> => [['Authorization', `Bearer ${s}`]]),
      text.map((s): Array<[string, string]> => [['Authorization', s]]),
      text.map((s): Array<[string, string]> => [['x-api-key', s]]),
      text.map((s): Array<[string, string]> => [['Authorization', `Bearer sk_live_${s}`]]),
      fc.constant<Array<[string, string]>>([['Authorization', 'Basic dXNlcjpwYXNz']]),
      altered.map((f): Array<[string, string]> => [['Authorization', `Bearer ${f(fuzz.key)}`]]),
      altered.map((f): Array<[string, string]> => [['x-api-key', f(fuzz.key)]]),
    );
    for (const route of KEYED) {
      await fc.assert(
        fc.asyncProperty(credential, async (headers) => {
          // An altered key that comes out equal to the real one (an upper-case of a key without letters) proves nothing.
          fc.pre(!headers.some(([, v]) => v.trim() === fuzz.key || v.trim() === `Bearer ${fuzz.key}`));
          tally.add(route.name, 'credentials');
          const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : '{}';
          const a = await rawExchange(
            gw.url,
            rawRequest({
              method: route.method,
              path: route.path,
              host: host(),
              headers: [...headers.map(([k, v]): [string, Buffer] => [k, Buffer.from(v, 'utf8')]), ['Content-Type', 'application/json']],
              body,
            }),
          );
          const { code } = expectRefusal(a, `${route.name} with ${JSON.stringify(headers)}`, [401]);
          expect(code).toBe('invalid_api_key');
        }),
        runs(10),
      );
    }
    await stillServingAndNothingHeld();
  }, 90_000);

  it('the admin API refuses a missing or wrong token 401 in the envelope on every route, and changes nothing', async () => {
    const before = await gw.ledger(
      `SELECT (SELECT count(*) FROM accounts)::int AS accounts, (SELECT count(*) FROM api_keys)::int AS keys,
      (SELECT total_credits::text FROM accounts WHERE id = $1) AS credits`,
      [fuzz.accountId],
    );
    const acct = fuzz.accountId;
    const routes: Array<[string, string, unknown]> = [
      ['POST', '/admin/v1/accounts', { credits: 1000 }],
      ['GET', '/admin/v1/accounts', undefined],
      ['GET', `/admin/v1/accounts?search=${acct}`, undefined],
      ['GET', `/admin/v1/accounts/${acct}`, undefined],
      ['PATCH', `/admin/v1/accounts/${acct}`, { suspended: true }],
      ['POST', `/admin/v1/accounts/${acct}/credits`, { amount: 1000 }],
      ['POST', `/admin/v1/accounts/${acct}/keys`, { label: 'stolen' }],
      ['DELETE', `/admin/v1/keys/${fuzz.keyId}`, undefined],
      ['POST', `/admin/v1/accounts/${acct}/webhook-secret`, undefined],
      ['GET', '/admin/v1/nothing-here', undefined],
    ];
    const token = fc.oneof(
      fc.constant(undefined),
      fc.string({ maxLength: 60, unit: 'binary-ascii' }).map(withoutControls),
      fc.constantFrom(
        () => `Bearer ${fuzz.key}`,
        () => `Bearer ${gw.adminToken}x`,
        () => `Bearer ${gw.adminToken.slice(0, -1)}`,
        () => `Bearer ${gw.adminToken.toUpperCase()}`,
        () => gw.adminToken,
        () => `Basic ${Buffer.from(`admin:${gw.adminToken}`).toString('base64')}`,
        () => 'Bearer ',
      ),
    );
    for (const [method, path, body] of routes) {
      const name = `${method} ${path.replace(acct, '{account_id}').replace(fuzz.keyId, '{key_id}')}`;
      await fc.assert(
        fc.asyncProperty(token, async (t) => {
          const value = typeof t === 'function' ? t() : t;
          tally.add(name, 'admin-token');
          const headers: Record<string, string> = { ...json, ...(value === undefined ? {} : { authorization: value }) };
          const res = await fetch(`${gw.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
          const { code } = expectRefusal(await answerOf(res), `${name} with ${JSON.stringify(value)}`, [401]);
          expect(code).toBe('invalid_api_key');
        }),
        runs(10),
      );
    }
    const after = await gw.ledger(
      `SELECT (SELECT count(*) FROM accounts)::int AS accounts, (SELECT count(*) FROM api_keys)::int AS keys,
      (SELECT total_credits::text FROM accounts WHERE id = $1) AS credits`,
      [fuzz.accountId],
    );
    expect(after).toEqual(before);
    await stillServingAndNothingHeld();
  }, 60_000);

  /** Path segments: arbitrary text percent-encoded, percent-escapes that decode to no UTF-8, prefixed look-alikes. */
  const segment = fc
    .tuple(
      // The prefixes real ids carry, so a lookup gets past any check of the prefix to the database.
      fc.constantFrom('', 'job_', 'req_', 'file_'),
      fc.oneof(
        fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }).map(encodeURIComponent),
        fc
          .array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 8 })
          .map((bs) => bs.map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')),
        fc.constantFrom('%', '%zz', '%c0%af', '%ff', '%00', 'a%00b', '..%2f..%2fadmin', '%2e%2e', '%25zz', 'x'.repeat(300)),
      ),
    )
    .map(([prefix, rest]) => `${prefix}${rest}`)
    // Segments fetch would resolve away (. and ..), and the public listing a job id could spell.
    .filter((s) => s !== '.' && s !== '..' && s !== 'models');

  it('unknown or undecodable ids in paths and queries (job, video, file, generation, model) answer 4xx in the envelope, never 5xx', async () => {
    const paths: Array<[string, (id: string) => string, string?]> = [
      ['GET /v1/queue/requests/{id}/status', (id) => `/v1/queue/requests/${id}/status`],
      ['GET /v1/queue/requests/{id}', (id) => `/v1/queue/requests/${id}`],
      ['GET /v1/queue/{model}/requests/{id}', (id) => `/v1/queue/demo/video-small/requests/${id}`],
      ['PUT /v1/queue/requests/{id}/cancel', (id) => `/v1/queue/requests/${id}/cancel`, 'PUT'],
      ['GET /v1/videos/{id}', (id) => `/v1/videos/${id}`],
      ['GET /v1/videos/{id}/content', (id) => `/v1/videos/${id}/content`],
      ['GET /v1/files/{id}', (id) => `/v1/files/${id}`],
      ['GET /v1/generation', (id) => `/v1/generation?id=${id}`],
      ['GET /v1/model/{author}/{slug}', (id) => `/v1/model/${id}/${id}`],
      ['GET /v1/model/{author}/{slug}', (id) => `/v1/model/demo/${id}`],
    ];
    for (const [name, path, method = 'GET'] of paths) {
      await fc.assert(
        fc.asyncProperty(segment, async (id) => {
          tally.add(name, 'ids');
          const a = await send({ method, path: path(id) }, undefined);
          expectRefusal(a, `${method} ${path(id)}`);
        }),
        runs(12),
      );
    }
    await stillServingAndNothingHeld();
  }, 90_000);

  it('junk query strings (unknown, repeated, bracketed, huge, undecodable, forged cursors) on listings and account routes never cause a 5xx', async () => {
    const param = fc.oneof(
      fc.constantFrom(
        ...['status', 'model', 'category', 'cursor', 'limit', 'id', 'logs', 'days', 'date', 'search'],
        ...['a[b]', 'limit[]', 'search[]', '__proto__', 'constructor'],
      ),
      fc.string({ maxLength: 10 }).map(encodeURIComponent),
    );
    const value = fc.oneof(
      fc.string({ maxLength: 30, unit: 'binary' }).map(encodeURIComponent),
      fc.constantFrom('%', '%zz', '%ff%fe', '%00', 'req_%00', 'demo%2Fchat-small%00', '-1', '0', '201', '1e999', 'NaN', 'queued', 'video', ''),
      // A length, spelled out below: a failure then prints the number, not the string.
      fc.integer({ min: 1_000, max: 6_000 }),
    );
    // A cursor that decodes as the listings write theirs (`<time>|<id>`) around an id no row has: NULs, odd bytes.
    const forgedCursor = fc
      .tuple(
        fc.constantFrom('2026-01-01T00:00:00.000000Z', '1970-01-01T00:00:00.000000Z', '9999-12-31T23:59:59.999999Z', '2026-13-40T99:99:99Z'),
        fc.string({ maxLength: 40, unit: 'binary' }),
      )
      .map(([at, id]) => Buffer.from(`${at}|${id}`).toString('base64url'));
    const query = fc.oneof(
      fc.array(fc.tuple(param, value), { minLength: 1, maxLength: 6 }),
      forgedCursor.map((c): Array<[string, string]> => [['cursor', c]]),
    );
    // Tried on every path, whatever the seed: a well-formed cursor around a NUL, a NUL in a search or a model filter, and
    // LIKE's wildcards in a search.
    const always: Array<[Array<[string, string]>]> = [
      [[['cursor', Buffer.from('2026-01-01T00:00:00.000000Z|job_\u0000x').toString('base64url')]]],
      [[['search', '%00']]],
      [[['model', 'demo%2Fchat-small%00']]],
      [[['search', encodeURIComponent('%_\\\'"')]]],
    ];
    const paths = [
      '/v1/jobs',
      '/v1/generation',
      '/v1/generations',
      '/v1/activity',
      // The admin API's listing, asked with the admin token: its search goes into a LIKE.
      '/admin/v1/accounts',
      '/v1/key',
      '/v1/credits',
      '/v1/queue/requests/{id}/status',
      '/v1/models',
      '/v1/models/count',
      '/v1/models/user',
      '/v1/embeddings/models',
      '/v1/images/models',
      '/v1/videos/models',
      '/v1/model/demo/chat-small',
      '/v1/catalog',
      '/v1/stats',
      '/v1/status',
    ];
    for (const path of paths) {
      await fc.assert(
        fc.asyncProperty(query, async (pairs) => {
          const q = pairs.map(([k, v]) => `${k}=${typeof v === 'number' ? 'q'.repeat(v) : v}`).join('&');
          tally.add(`GET ${path}`, 'query');
          const admin: Record<string, string> = path.startsWith('/admin/') ? { authorization: `Bearer ${gw.adminToken}` } : {};
          const a = await send({ method: 'GET', path: `${path.replace('{id}', 'job_x')}?${q}` }, undefined, admin);
          if (a.status !== undefined && a.status >= 200 && a.status < 300) return;
          expectRefusal(a, `GET ${path}?${q.slice(0, 200)}`);
        }),
        { ...runs(8), examples: always },
      );
    }
    await stillServingAndNothingHeld();
  }, 90_000);

  it('an unknown path under /v1, or a method a route does not serve, answers 4xx in the envelope', async () => {
    const method = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE');
    const path = fc.oneof(
      fc.constantFrom(...KEYED.map((r) => r.path), '/v1/images/edits', '/v1/audio/translations', '/v1/moderations', '/v1/files', '/v1/', '/v1'),
      fc.array(segment, { minLength: 1, maxLength: 4 }).map((segs) => `/v1/${segs.join('/')}`),
    );
    const served = new Set(KEYED.map((r) => `${r.method} ${r.path}`));
    await fc.assert(
      fc.asyncProperty(method, path, async (m, p) => {
        fc.pre(!served.has(`${m} ${p}`));
        tally.add('unknown paths and methods', 'method');
        const a = await send({ method: m, path: p, mcp: p === '/v1/mcp' }, m === 'GET' ? undefined : '{"x":1}', json);
        if (p === '/v1/mcp') expectMcpRefusal(a, `${m} ${p}`);
        else expectRefusal(a, `${m} ${p}`);
      }),
      runs(80),
    );
    await stillServingAndNothingHeld();
  }, 60_000);

  it('hundreds of headers, distinct or one name repeated, are read like any request: the body decides the refusal', async () => {
    const flood = fc.record({
      count: fc.integer({ min: 100, max: 600 }),
      same: fc.boolean(),
      value: fc.string({ maxLength: 6, unit: 'binary-ascii' }).map((s) => withoutControls(s).trim()),
      route: fc.constantFrom(...BODY_ROUTES.map((r) => r.name)),
    });
    await fc.assert(
      fc.asyncProperty(flood, async ({ count, same, value, route: name }) => {
        const route = BODY_ROUTES.find((r) => r.name === name)!;
        tally.add(route.name, 'header-flood');
        const headers: Array<[string, string]> = [
          ['Authorization', `Bearer ${fuzz.key}`],
          ['Content-Type', 'application/json'],
        ];
        for (let i = 0; i < count; i++) headers.push([same ? 'X-Fuzz' : `X-Fuzz-${i}`, value]);
        const a = await rawExchange(gw.url, rawRequest({ method: route.method, path: route.path, host: host(), headers, body: '[]' }));
        refused(route, a, `${route.name} with ${count} headers`, route.mcp ? undefined : [400]);
      }),
      runs(30),
    );
    await stillServingAndNothingHeld();
  }, 60_000);

  it('a header section past 16 KB (one huge value, or thousands of headers) answers 431 in the envelope', async () => {
    // Described, not spelled out, so a failure prints a line and not 40 KB.
    const flood = fc.oneof(
      fc.record({ kind: fc.constant('one huge value'), n: fc.integer({ min: 17 * 1024, max: 64 * 1024 }) }),
      fc.record({ kind: fc.constant('thousands of headers'), n: fc.integer({ min: 1_000, max: 3_000 }) }),
      fc.record({ kind: fc.constant('a huge key'), n: fc.integer({ min: 17 * 1024, max: 40 * 1024 }) }),
    );
    const spell = ({ kind, n }: { kind: string; n: number }): Array<[string, string]> =>
      kind === 'one huge value'
        ? [['X-Huge', 'h'.repeat(n)]]
        : kind === 'a huge key'
          ? [['Authorization', `Bearer ${'k'.repeat(n)}`]]
          : Array.from({ length: n }, (_, i): [string, string] => [`X-Fuzz-${i}`, 'v'.repeat(10)]);
    await fc.assert(
      fc.asyncProperty(flood, fc.constantFrom(...KEYED.map((r) => r.name)), async (described, name) => {
        const route = KEYED.find((r) => r.name === name)!;
        const headers = spell(described);
        tally.add(route.name, 'header-overflow');
        const all: Array<[string, string]> = [['Authorization', `Bearer ${fuzz.key}`], ...headers, ['Content-Type', 'application/json']];
        const a = await rawExchange(gw.url, rawRequest({ method: route.method, path: route.path, host: host(), headers: all, body: '{}' }));
        expectRefusal(a, `${route.name} with ${headers.length} headers of ${headers.reduce((s, [k, v]) => s + k.length + v.length, 0)} bytes`, [431]);
      }),
      runs(15),
    );
    await stillServingAndNothingHeld();
  }, 60_000);

  it('malformed HTTP (broken framing, control or non-ASCII bytes in the request line or a header) answers 4xx in the envelope and ends', async () => {
    const auth = () => `Authorization: Bearer ${fuzz.key}\r\n`;
    const cases: Array<[string, () => Buffer]> = [
      ['Content-Length not a number', () => Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n${auth()}Content-Length: abc\r\n\r\n{}`)],
      ['negative Content-Length', () => Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n${auth()}Content-Length: -5\r\n\r\n{}`)],
      [
        'two different Content-Lengths',
        () => Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n${auth()}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x`),
      ],
      [
        'Content-Length beside chunked',
        () =>
          Buffer.from(
            `POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n${auth()}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
          ),
      ],
      [
        'a chunk size that is not hex',
        () => Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n${auth()}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`),
      ],
      [
        'an unknown transfer coding',
        () => Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n${auth()}Transfer-Encoding: bogus\r\n\r\n{}`),
      ],
      ['a NUL in a header value', () => Buffer.from(`GET /v1/credits HTTP/1.1\r\nHost: h\r\n${auth()}X-Bad: a\0b\r\n\r\n`)],
      ['a space before a header colon', () => Buffer.from(`GET /v1/credits HTTP/1.1\r\nHost: h\r\n${auth()}X-Bad : 1\r\n\r\n`)],
      ['a header name that is not a token', () => Buffer.from(`GET /v1/credits HTTP/1.1\r\nHost: h\r\n${auth()}X(Bad): 1\r\n\r\n`)],
      ['a bare LF inside a header value', () => Buffer.from(`GET /v1/credits HTTP/1.1\r\nHost: h\r\n${auth()}X-Bad: a\nb\r\n\r\n`)],
      ['an HTTP version that does not exist', () => Buffer.from(`GET /v1/credits HTTP/9.9\r\nHost: h\r\n${auth()}\r\n`)],
      ['a method that is not a token', () => Buffer.from(`G(T /v1/credits HTTP/1.1\r\nHost: h\r\n${auth()}\r\n`)],
      ['TLS bytes on the plain listener', () => Buffer.from('160301020001000100030300', 'hex')],
      [
        'non-ASCII bytes in the path',
        () => Buffer.concat([Buffer.from('GET /v1/files/'), Buffer.from([0xff, 0xfe, 0x80]), Buffer.from(` HTTP/1.1\r\nHost: h\r\n${auth()}\r\n`)]),
      ],
      [
        'non-UTF-8 bytes in the API key',
        () =>
          Buffer.concat([
            Buffer.from('GET /v1/credits HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer sk_live_'),
            Buffer.from([0xff, 0xc0, 0x80]),
            Buffer.from('\r\n\r\n'),
          ]),
      ],
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...cases), async ([what, bytes]) => {
        tally.add('malformed HTTP', 'http');
        const a = await rawExchange(gw.url, bytes());
        expectRefusal(a, what);
      }),
      { ...runs(cases.length * 2), examples: cases.map((c) => [c]) },
    );
    await stillServingAndNothingHeld();
  }, 60_000);
});
