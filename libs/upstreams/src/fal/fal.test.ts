import type { ResolvedEndpoint } from '@gateway/config';
import { json, startFakeFal, startFakeUpstream, type FakeFal } from '../testing';
import { UpstreamError } from '../upstream-error';
import { createFalProtocol } from '.';

const KEY = 'fal-test-key';
const fal = createFalProtocol({ FAL_KEY: KEY });
const signal = new AbortController().signal;
const opts = { signal, requestId: 'req_test' };

const endpoint = (baseUrl: string, model: string, timeout_ms?: number): ResolvedEndpoint => ({
  key: `fal/${model}`,
  provider: { id: 'fal', kind: 'fal', base_url: baseUrl, api_key_env: 'FAL_KEY', timeout_ms },
  upstreamModel: model,
});

async function failure(p: Promise<unknown>, host: string): Promise<UpstreamError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  expect(err.message).not.toContain(host);
  return err;
}

describe('fal queue protocol against the fake fal', () => {
  let fake: FakeFal;
  beforeAll(async () => {
    fake = await startFakeFal({ key: KEY });
  });
  afterAll(() => fake.close());
  const host = () => new URL(fake.url).host;

  it('submits to the model path with the key, polls and fetches under the app id, and downloads the video', async () => {
    const ep = endpoint(fake.url, 'fake-ai/video/v2/text-to-video/polls-2');
    const input = { prompt: 'a red fox', duration: 3 };
    const ticket = await fal.submit(ep, input, opts);
    const submitted = fake.requests.at(-1)!;
    expect(submitted).toMatchObject({ method: 'POST', path: '/fake-ai/video/v2/text-to-video/polls-2', body: input });
    expect(submitted.headers).toMatchObject({ authorization: `Key ${KEY}`, 'content-type': 'application/json', 'x-request-id': 'req_test' });
    expect(ticket.statusUrl).toBe(`${fake.url}/fake-ai/video/requests/${ticket.upstreamId}/status`);

    expect(await fal.status(ep, ticket, { logs: false, signal })).toEqual({ state: 'IN_QUEUE', queuePosition: 1, logs: [], inferenceTime: null });
    const running = await fal.status(ep, ticket, { logs: true, signal });
    expect(running).toMatchObject({ state: 'IN_PROGRESS', queuePosition: null, inferenceTime: null });
    expect(running.logs.map((l) => l.message)).toEqual(['Request queued', 'Generating video']);
    expect(fake.requests.at(-1)!.path).toBe(`/fake-ai/video/requests/${ticket.upstreamId}/status?logs=1`);
    expect(await fal.status(ep, ticket, { logs: false, signal })).toMatchObject({ state: 'COMPLETED', inferenceTime: 1.25 });

    const result = await fal.result(ep, ticket, { signal });
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: `/fake-ai/video/requests/${ticket.upstreamId}` });
    expect(result).toMatchObject({ seconds: 3, video: { content_type: 'video/mp4' } });
    const video = result.video as { url: string; file_size: number };
    const file = await fal.download(ep, video.url, { signal });
    expect(file.contentType).toBe('video/mp4');
    expect(file.bytes.length).toBe(video.file_size);
    const mm = await import('music-metadata');
    expect((await mm.parseBuffer(file.bytes, { mimeType: 'video/mp4' })).format.duration).toBe(3);
  });

  it('builds the URLs itself when the submit answer points at another origin, so the key never leaves base_url', async () => {
    const ep = endpoint(fake.url, 'fake-ai/video/foreign-urls');
    const ticket = await fal.submit(ep, {}, opts);
    expect(ticket.statusUrl).toMatch(/^http:\/\/foreign\.invalid\//);
    expect(await fal.status(ep, ticket, { logs: false, signal })).toMatchObject({ state: 'COMPLETED' });
    expect(fake.requests.at(-1)!.path).toBe(`/fake-ai/video/requests/${ticket.upstreamId}/status`);
    await fal.result(ep, ticket, { signal });
    await fal.cancel(ep, ticket, { signal });
    expect(fake.requests.at(-1)).toMatchObject({ method: 'PUT', path: `/fake-ai/video/requests/${ticket.upstreamId}/cancel` });
    // A bare id (a ticket stored without URLs) is enough.
    expect(await fal.result(ep, { upstreamId: ticket.upstreamId }, { signal })).toMatchObject({ seconds: 5 });
  });

  it('cancels best effort: requested while running, ALREADY_COMPLETED afterwards, neither throws', async () => {
    const ep = endpoint(fake.url, 'fake-ai/video/polls-5');
    const running = await fal.submit(ep, {}, opts);
    await expect(fal.cancel(ep, running, { signal })).resolves.toBeUndefined();
    expect(fake.jobs.get(running.upstreamId)?.canceled).toBe(true);

    const done = await fal.submit(endpoint(fake.url, 'fake-ai/video'), {}, opts);
    await fal.status(ep, done, { logs: false, signal });
    await expect(fal.cancel(ep, done, { signal })).resolves.toBeUndefined();
    expect(fake.jobs.get(done.upstreamId)?.canceled).toBe(false);
  });

  it('reads directives from the input too, and answers n videos', async () => {
    const ep = endpoint(fake.url, 'fake-ai/video');
    const ticket = await fal.submit(ep, { fake: 'polls-1', n: 2, duration: 2 }, opts);
    expect((await fal.status(ep, ticket, { logs: false, signal })).state).toBe('IN_QUEUE');
    expect((await fal.status(ep, ticket, { logs: false, signal })).state).toBe('COMPLETED');
    const result = await fal.result(ep, ticket, { signal });
    const videos = result.videos as Array<{ url: string }>;
    expect(videos).toHaveLength(2);
    expect((await fal.download(ep, videos[1].url, { signal })).bytes.length).toBeGreaterThan(0);
  });

  it('ends the job as the client fault when the result is a content-policy refusal or a validation failure', async () => {
    for (const [directive, reason] of [
      ['reject', 'flagged by a content checker'],
      ['invalid', 'unexpected value'],
    ]) {
      const ep = endpoint(fake.url, `fake-ai/video/${directive}`);
      const ticket = await fal.submit(ep, {}, opts);
      const err = await failure(fal.result(ep, ticket, { signal }), host());
      expect(err).toMatchObject({ kind: 'status', status: 422, clientFault: true });
      expect(err.message).toContain(reason);
    }
  });

  it('fails the job, not the client, when the result answers 500', async () => {
    const ep = endpoint(fake.url, 'fake-ai/video/result-500');
    const ticket = await fal.submit(ep, {}, opts);
    expect(await failure(fal.result(ep, ticket, { signal }), host())).toMatchObject({ status: 500, clientFault: false });
  });

  it.each([
    ['submit-500', 500],
    ['submit-429', 429],
  ])('fails over when the submit answers %s', async (directive, status) => {
    const err = await failure(fal.submit(endpoint(fake.url, `fake-ai/video/${directive}`), {}, opts), host());
    expect(err).toMatchObject({ kind: 'status', status, clientFault: false });
  });

  it('fails over on a wrong key (401), and times out on a submit that never answers', async () => {
    const wrong = createFalProtocol({ FAL_KEY: 'wrong' });
    expect(await failure(wrong.submit(endpoint(fake.url, 'fake-ai/video'), {}, opts), host())).toMatchObject({ status: 401, clientFault: false });
    expect(await failure(fal.submit(endpoint(fake.url, 'fake-ai/video/submit-hang', 150), {}, opts), host())).toMatchObject({
      kind: 'timeout',
      clientFault: false,
    });
  });

  it('times out on a result that never answers, as not the client fault', async () => {
    const ep = endpoint(fake.url, 'fake-ai/video/result-hang', 150);
    const ticket = await fal.submit(ep, {}, opts);
    expect(await failure(fal.result(ep, ticket, { signal }), host())).toMatchObject({ kind: 'timeout', clientFault: false });
  });
});

describe('fal queue protocol edge cases', () => {
  it('refuses to download anything but http(s)', async () => {
    const ep = endpoint('http://127.0.0.1:9', 'a/b');
    await expect(fal.download(ep, 'file:///etc/passwd', { signal })).rejects.toMatchObject({ kind: 'protocol' });
    await expect(fal.download(ep, 'simulated://video/x/0.mp4', { signal })).rejects.toMatchObject({ kind: 'protocol' });
  });

  it('a malformed answer is the upstream fault; a 422 at submit is the client fault; a connect failure fails over', async () => {
    let answer = (res: import('node:http').ServerResponse) => json(res, 200, { nope: true });
    const up = await startFakeUpstream((_hit, res) => answer(res));
    try {
      const ep = endpoint(up.baseUrl, 'a/b');
      expect(await fal.submit(ep, {}, opts).catch((e) => e)).toMatchObject({ kind: 'protocol', clientFault: false });
      answer = (res) => json(res, 200, { status: 'SOMETHING' });
      expect(await fal.status(ep, { upstreamId: 'x' }, { logs: false, signal }).catch((e) => e)).toMatchObject({ kind: 'protocol' });
      answer = (res) => json(res, 422, { detail: [{ msg: 'prompt is required', type: 'missing' }] });
      expect(await fal.submit(ep, {}, opts).catch((e) => e)).toMatchObject({
        status: 422,
        clientFault: true,
        message: 'upstream answered 422: prompt is required',
      });
      answer = (res) => json(res, 503, { detail: 'busy' });
      expect(await fal.status(ep, { upstreamId: 'x' }, { logs: false, signal }).catch((e) => e)).toMatchObject({ status: 503, clientFault: false });
      await expect(fal.cancel(ep, { upstreamId: 'x' }, { signal })).rejects.toMatchObject({ status: 503 });
      answer = (res) => json(res, 404, { detail: 'Request not found' });
      await expect(fal.cancel(ep, { upstreamId: 'x' }, { signal })).resolves.toBeUndefined();
    } finally {
      await up.close();
    }
    const closed = await startFakeUpstream(() => undefined);
    await closed.close();
    expect(await fal.submit(endpoint(closed.baseUrl, 'a/b'), {}, opts).catch((e) => e)).toMatchObject({ kind: 'connect', clientFault: false });
  });

  it('caps a download: a declared or streamed size over the limit is refused; the key goes only to base_url', async () => {
    const { download } = await import('./download');
    const { Agent } = await import('undici');
    const agent = new Agent();
    const files = await startFakeUpstream((hit, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4; codecs=avc1' });
      // Written in pieces, the answer is chunked: no length is declared and only counting catches it.
      if (hit.path.includes('streamed')) for (let i = 0; i < 4; i++) res.write(Buffer.alloc(512));
      res.end(Buffer.alloc(hit.path.includes('big') ? 2_048 : 16));
    });
    try {
      const elsewhere = endpoint('http://127.0.0.2:1', 'a/b');
      const env = { FAL_KEY: KEY };
      await expect(download(elsewhere, `${files.baseUrl}/big.mp4`, { agent, env, signal, maxBytes: 1_024 })).rejects.toMatchObject({
        kind: 'protocol',
      });
      await expect(download(elsewhere, `${files.baseUrl}/streamed.mp4`, { agent, env, signal, maxBytes: 1_024 })).rejects.toMatchObject({
        kind: 'protocol',
      });
      const small = await download(elsewhere, `${files.baseUrl}/small.mp4`, { agent, env, signal, maxBytes: 1_024 });
      expect(small).toMatchObject({ contentType: 'video/mp4' });
      expect(files.hits.at(-1)!.headers.authorization).toBeUndefined();
      await download(endpoint(files.baseUrl, 'a/b'), `${files.baseUrl}/small.mp4`, { agent, env, signal });
      expect(files.hits.at(-1)!.headers.authorization).toBe(`Key ${KEY}`);
      const aborted = new AbortController();
      aborted.abort();
      await expect(download(elsewhere, `${files.baseUrl}/small.mp4`, { agent, env, signal: aborted.signal })).rejects.toBeInstanceOf(UpstreamError);
    } finally {
      await files.close();
      await agent.close();
    }
  });
});
