import type http from 'node:http';
import { createUpstreamClient } from './http';
import { FAKE_ENV, endpointAt, json, startFakeUpstream, type FakeUpstream } from './testing/fake-upstream';
import { UpstreamError } from './upstream-error';

/** The non-streamed JSON call every chat, embeddings, images and rerank answer is read through. */
describe('jsonWhole', () => {
  const client = createUpstreamClient({}, FAKE_ENV);
  let fake: FakeUpstream;
  let respond: (res: http.ServerResponse) => void;
  beforeAll(async () => {
    fake = await startFakeUpstream((_hit, res) => respond(res));
  });
  afterAll(() => fake.close());

  const call = (opts: { signal?: AbortSignal; timeout_ms?: number } = {}) =>
    client.jsonWhole(
      endpointAt(fake.baseUrl, { timeout_ms: opts.timeout_ms }),
      '/chat/completions',
      { model: 'up-model' },
      {
        requestId: 'req_whole',
        signal: opts.signal,
      },
    );
  const failure = (opts?: Parameters<typeof call>[0]) =>
    call(opts).then(
      () => {
        throw new Error('the call succeeded');
      },
      (e: unknown) => {
        expect(e).toBeInstanceOf(UpstreamError);
        return e as UpstreamError;
      },
    );

  it('sends the payload as JSON with the key and the request id, and parses the answer', async () => {
    respond = (res) => json(res, 200, { ok: true });
    await expect(call()).resolves.toEqual({ ok: true });
    const hit = fake.hits.at(-1);
    expect(hit?.headers).toMatchObject({
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: 'Bearer sk-fake',
      'x-request-id': 'req_whole',
    });
    expect(JSON.parse(String(hit?.body))).toEqual({ model: 'up-model' });
  });

  it('reads the key from the environment on every call, and asks each kind of call on one path for its own answer', async () => {
    const env: NodeJS.ProcessEnv = { ...FAKE_ENV };
    const rotating = createUpstreamClient({}, env);
    const ep = endpointAt(fake.baseUrl);
    respond = (res) => json(res, 200, { ok: true });
    await rotating.jsonWhole(ep, '/chat/completions', {}, { requestId: 'req_first' });
    expect(fake.hits.at(-1)?.headers).toMatchObject({ authorization: 'Bearer sk-fake', 'x-request-id': 'req_first' });
    // The URL, headers and timeouts are worked out once per provider and path; a key set later must still be used.
    env.FAKE_KEY = 'sk-rotated';
    await rotating.jsonWhole(ep, '/chat/completions', {}, { requestId: 'req_second' });
    expect(fake.hits.at(-1)?.headers).toMatchObject({ authorization: 'Bearer sk-rotated', 'x-request-id': 'req_second' });
    delete env.FAKE_KEY;
    await rotating.jsonWhole(ep, '/chat/completions', {}, { requestId: 'req_keyless' });
    expect(fake.hits.at(-1)?.headers.authorization).toBeUndefined();
    // Read to its end (the JSON answer holds no frame), so the call is complete before its headers are checked.
    for await (const _ of await rotating.sse(ep, '/chat/completions', { stream: true }, { requestId: 'req_streamed' }));
    expect(fake.hits.at(-1)?.headers).toMatchObject({ accept: 'text/event-stream', 'x-request-id': 'req_streamed' });
  });

  it('reads an answer sent in many chunks after an informational 103, multi-byte characters split across chunks', async () => {
    const text = JSON.stringify({ content: 'Ünïcödé 日本語 '.repeat(2_000) });
    respond = (res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      res.writeHead(200, { 'content-type': 'application/json' });
      const bytes = Buffer.from(`\ufeff${text}`);
      // Steps of 7,001 bytes cut three-byte characters apart.
      for (let i = 0; i < bytes.length; i += 7_001) res.write(bytes.subarray(i, i + 7_001));
      res.end();
    };
    await expect(call()).resolves.toEqual(JSON.parse(text));
  });

  it('fails over on an answer that is not JSON: the upstream is at fault', async () => {
    respond = (res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>bad gateway</html>');
    };
    expect(await failure()).toMatchObject({ kind: 'protocol', clientFault: false, message: 'upstream answer is not JSON' });
  });

  it.each([
    [503, false],
    [400, true],
  ])('throws %i as a status failure with the upstream reason (client fault: %s)', async (status, clientFault) => {
    respond = (res) => json(res, status, { error: { message: 'no capacity' } });
    expect(await failure()).toMatchObject({ kind: 'status', status, clientFault, message: `upstream answered ${status}: no capacity` });
  });

  it('fails over as a broken connection when the upstream hangs up halfway through the body', async () => {
    respond = (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"choices":[');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    expect(await failure()).toMatchObject({ kind: 'broken_stream', clientFault: false });
  });

  it("keeps an error answer's status when the upstream hangs up in its body: a cut 400 is still the client's fault", async () => {
    respond = (res) => {
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"error":{"message":"bad');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    expect(await failure()).toMatchObject({ kind: 'status', status: 400, clientFault: true });
  });

  it('fails over as a timeout when no head arrives within timeout_ms', async () => {
    respond = () => {
      /* never answers */
    };
    expect(await failure({ timeout_ms: 100 })).toMatchObject({ kind: 'timeout' });
  });

  it('stops waiting when its signal aborts, before or during the call', async () => {
    respond = () => {
      /* never answers */
    };
    expect(await failure({ signal: AbortSignal.abort() })).toMatchObject({ kind: 'broken_stream' });
    const abort = new AbortController();
    const pending = failure({ signal: abort.signal });
    setTimeout(() => abort.abort(), 50);
    expect(await pending).toMatchObject({ kind: 'broken_stream' });
  });
});
