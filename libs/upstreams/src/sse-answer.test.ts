import type http from 'node:http';
import { createUpstreamClient } from './http';
import { FAKE_ENV, endpointAt, startFakeUpstream, type FakeUpstream } from './testing/fake-upstream';
import { SseFrames } from './sse-answer';
import { UpstreamError, classify } from './upstream-error';

/** The streamed call every chat stream is read through: undici's callbacks feed the reader directly. */
describe('sse (a streamed answer read as it arrives)', () => {
  const client = createUpstreamClient({}, FAKE_ENV);
  let fake: FakeUpstream;
  let respond: (res: http.ServerResponse, req: http.IncomingMessage) => void;
  beforeAll(async () => {
    fake = await startFakeUpstream((_hit, res, req) => respond(res, req));
  });
  afterAll(() => fake.close());

  const call = (opts: { signal?: AbortSignal } = {}) =>
    client.sse(endpointAt(fake.baseUrl), '/chat/completions', { model: 'up-model', stream: true }, { requestId: 'req_sse', signal: opts.signal });
  const sse = (res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });
  const read = async (frames: AsyncIterable<string>) => {
    const out: string[] = [];
    for await (const d of frames) out.push(d);
    return out;
  };
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error('the call succeeded');
      },
      (e: unknown) => classify(e),
    );

  it('asks for an event stream and hands each payload over before the answer has ended', async () => {
    let finish: () => void = () => {};
    respond = (res) => {
      sse(res);
      res.write('data: {"n":1}\n\n');
      finish = () => res.end('data: {"n":2}\n\ndata: [DONE]\n\n');
    };
    const frames = await call();
    expect(fake.hits.at(-1)?.headers).toMatchObject({ accept: 'text/event-stream', 'x-request-id': 'req_sse' });
    await expect(frames.next()).resolves.toEqual({ value: '{"n":1}', done: false });
    finish();
    expect(await read(frames)).toEqual(['{"n":2}', '[DONE]']);
  });

  it('throws an error answer as the status and the upstream’s reason, the client’s fault for a 400', async () => {
    respond = (res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'messages is required' } }));
    };
    const err = await failure(call());
    expect(err).toMatchObject({ kind: 'status', status: 400, clientFault: true, message: 'upstream answered 400: messages is required' });
  });

  it('fails a connection refused before any answer as a connect failure', async () => {
    const dead = createUpstreamClient({}, FAKE_ENV);
    const err = await failure(dead.sse(endpointAt('http://127.0.0.1:9/v1'), '/chat/completions', {}, { requestId: 'r' }));
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.kind).toBe('connect');
  });

  it('breaks the reader, after what arrived, when the upstream hangs up mid-answer', async () => {
    respond = (res, req) => {
      sse(res);
      res.write('data: {"n":1}\n\n', () => setTimeout(() => req.socket.destroy(), 20));
    };
    const frames = await call();
    await expect(frames.next()).resolves.toEqual({ value: '{"n":1}', done: false });
    const err = await failure(frames.next());
    expect(err).toMatchObject({ kind: 'broken_stream' });
  });

  it('aborts the call when the signal fires while the answer is read', async () => {
    respond = (res) => {
      sse(res);
      res.write('data: {"n":1}\n\n');
    };
    const abort = new AbortController();
    const frames = await call({ signal: abort.signal });
    await frames.next();
    const pending = frames.next();
    abort.abort();
    expect(await failure(pending)).toMatchObject({ kind: 'broken_stream' });
  });

  it('a reader that stops at [DONE] leaves the rest to be read to its end, and the connection goes back to the pool', async () => {
    const sockets: unknown[] = [];
    respond = (res, req) => {
      sockets.push(req.socket);
      sse(res);
      res.write('data: {"n":1}\n\ndata: [DONE]\n\n');
      setTimeout(() => res.end(': trailing comment\n\n'), 20);
    };
    // A pool of its own: undici opens a fresh socket for the call after an aborted one (the test before), whatever reads it.
    const own = createUpstreamClient({}, FAKE_ENV);
    for (let i = 0; i < 3; i++) {
      for await (const d of await own.sse(endpointAt(fake.baseUrl), '/chat/completions', {}, { requestId: 'r' })) if (d === '[DONE]') break;
      await new Promise((r) => setTimeout(r, 60));
    }
    expect(sockets.map((s) => sockets.indexOf(s))).toEqual([0, 0, 0]);
  });

  it('pauses an upstream that writes faster than the reader reads, and loses nothing', async () => {
    const total = 5_000;
    let written = 0;
    let writtenAtFirstRead = -1;
    respond = (res) => {
      sse(res);
      const more = () => {
        while (written < total) {
          written++;
          if (!res.write(`data: {"n":${written},"pad":"${'x'.repeat(4_000)}"}\n\n`)) return void res.once('drain', more);
        }
        res.end('data: [DONE]\n\n');
      };
      more();
    };
    const frames = await call();
    let n = 0;
    for await (const d of frames) {
      if (n === 0) {
        // Let the upstream write all it can before anything is read: 20 MB is more than loopback's buffers hold.
        await new Promise((r) => setTimeout(r, 200));
        writtenAtFirstRead = written;
      }
      if (d !== '[DONE]') expect(JSON.parse(d).n).toBe(++n);
    }
    expect(n).toBe(total);
    expect(writtenAtFirstRead).toBeLessThan(total);
  });
});

/** The reader's own rules, driven as undici drives it: `push` per chunk, then `finish` or `fail`. */
describe('SseFrames', () => {
  const frames = (resume: () => void = () => {}) => new SseFrames(resume);

  it('hands over what arrived before a failure, then the failure', async () => {
    const f = frames();
    f.push(Buffer.from('data: a\n\ndata: b\n\n'));
    f.fail(new Error('socket hang up'));
    await expect(f.next()).resolves.toEqual({ value: 'a', done: false });
    await expect(f.next()).resolves.toEqual({ value: 'b', done: false });
    await expect(f.next()).rejects.toThrow('socket hang up');
  });

  it('wakes a reader waiting for the next payload, and ends it at the body’s end', async () => {
    const f = frames();
    const waiting = f.next();
    f.push(Buffer.from('data: a\n\n'));
    await expect(waiting).resolves.toEqual({ value: 'a', done: false });
    const last = f.next();
    f.finish();
    await expect(last).resolves.toEqual({ value: undefined, done: true });
  });

  it('pauses past 64 unread payloads and resumes once the reader has taken half', async () => {
    const resume = jest.fn();
    const f = frames(resume);
    const pushes = Array.from({ length: 70 }, (_, i) => f.push(Buffer.from(`data: ${i}\n\n`)));
    expect(pushes.indexOf(false)).toBe(63);
    for (let i = 0; i < 37; i++) await f.next();
    expect(resume).not.toHaveBeenCalled();
    await f.next();
    expect(resume).toHaveBeenCalledTimes(1);
  });

  it('a reader that returns ends a pending read', async () => {
    const f = frames();
    const pending = f.next();
    await f.return();
    await expect(pending).resolves.toEqual({ value: undefined, done: true });
  });

  it('a reader that returns resumes a paused upstream and drops what still arrives', async () => {
    const resume = jest.fn();
    const f = frames(resume);
    for (let i = 0; i < 64; i++) f.push(Buffer.from(`data: ${i}\n\n`));
    await expect(f.return()).resolves.toEqual({ value: undefined, done: true });
    expect(resume).toHaveBeenCalledTimes(1);
    expect(f.push(Buffer.from('data: late\n\n'))).toBe(true);
    f.finish();
    await expect(f.next()).resolves.toEqual({ value: undefined, done: true });
  });
});
