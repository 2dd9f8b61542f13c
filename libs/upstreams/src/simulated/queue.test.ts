import type { ResolvedEndpoint } from '@gateway/config';
import { createProtocols } from '..';
import { silentMp4 } from './mp4';
import { SIMULATED_QUEUE_MS, createSimulatedQueue } from './queue';

const ep = { key: 'sim/sim-video', provider: { id: 'sim', kind: 'simulated' }, upstreamModel: 'sim-video' } as ResolvedEndpoint;
const opts = { signal: new AbortController().signal, requestId: 'req_test' };
const signal = opts.signal;

type MusicMetadata = typeof import('music-metadata');
const musicMetadata = (): Promise<MusicMetadata> => import('music-metadata');

/** A queue on a clock the test moves. */
function queueAt(start = 1_700_000_000_000) {
  let now = start;
  return { queue: createSimulatedQueue(() => now), advance: (ms: number) => (now += ms) };
}

describe('simulated video queue', () => {
  it('is what createProtocols serves for kind simulated, and for kind fal', () => {
    const protocols = createProtocols({});
    expect(typeof protocols.queue('simulated')?.submit).toBe('function');
    expect(typeof protocols.queue('fal')?.submit).toBe('function');
    expect(protocols.queue('openai')).toBeUndefined();
  });

  it('queues, runs for 100 ms per video second, then completes with a result shaped like a fal video model', async () => {
    const { queue, advance } = queueAt();
    const ticket = await queue.submit(ep, { prompt: 'a red fox', duration: 8 }, opts);

    const queued = await queue.status(ep, ticket, { logs: true, signal });
    expect(queued).toMatchObject({ state: 'IN_QUEUE', inferenceTime: null });
    expect(queued.queuePosition).toBeGreaterThanOrEqual(0);
    expect(queued.logs.map((l) => l.message)).toEqual(['Request queued']);
    await expect(queue.result(ep, ticket, { signal })).rejects.toMatchObject({ clientFault: false });

    advance(SIMULATED_QUEUE_MS);
    expect(await queue.status(ep, ticket, { logs: false, signal })).toEqual({
      state: 'IN_PROGRESS',
      queuePosition: null,
      logs: [],
      inferenceTime: null,
    });

    advance(800);
    const done = await queue.status(ep, ticket, { logs: true, signal });
    expect(done).toMatchObject({ state: 'COMPLETED', queuePosition: null, inferenceTime: 0.8 });
    expect(done.logs.at(-1)?.message).toBe('Rendering frames: 100%');
    expect(done.logs.every((l) => l.level === 'INFO' && !Number.isNaN(Date.parse(l.timestamp)))).toBe(true);

    const result = await queue.result(ep, ticket, { signal });
    const url = `simulated://video/${ticket.upstreamId}/0.mp4`;
    expect(result).toEqual({
      video: { url, content_type: 'video/mp4', file_name: 'video-0.mp4', file_size: silentMp4(8).length },
      seconds: 8,
    });
    expect(result.videos).toBeUndefined();
  });

  it('caps the run at 1.5 s however long the video, and defaults to 5 s and one video', async () => {
    const { queue, advance } = queueAt();
    const long = await queue.submit(ep, { prompt: 'p', duration: 600 }, opts);
    const plain = await queue.submit(ep, {}, opts);
    advance(SIMULATED_QUEUE_MS + 1_500);
    expect((await queue.status(ep, long, { logs: false, signal })).state).toBe('COMPLETED');
    expect(await queue.result(ep, plain, { signal })).toMatchObject({ seconds: 5, video: { url: expect.stringMatching(/\/0\.mp4$/) } });
  });

  it('counts the queue position down while queued', async () => {
    const { queue, advance } = queueAt();
    const ticket = await queue.submit(ep, {}, opts);
    const positions: Array<number | null> = [];
    for (let i = 0; i < 4; i++, advance(100)) positions.push((await queue.status(ep, ticket, { logs: false, signal })).queuePosition);
    expect(positions).toEqual([2, 1, 0, null]);
  });

  it('answers n videos, each its own URL, and reads fal-style string durations', async () => {
    const { queue, advance } = queueAt();
    const ticket = await queue.submit(ep, { prompt: 'p', duration: '3', n: 3 }, opts);
    advance(5_000);
    const result = await queue.result(ep, ticket, { signal });
    expect(result.seconds).toBe(3);
    const videos = result.videos as Array<{ url: string }>;
    expect(videos.map((v) => v.url)).toEqual([0, 1, 2].map((i) => `simulated://video/${ticket.upstreamId}/${i}.mp4`));
    expect(result.video).toEqual(videos[0]);
  });

  it('survives a restart: another instance answers the same id the same way', async () => {
    const { queue, advance } = queueAt();
    const ticket = await queue.submit(ep, { duration: 2 }, opts);
    advance(2_000);
    const later = createSimulatedQueue(() => 1_700_000_000_000 + 2_000);
    expect(await later.result(ep, ticket, { signal })).toEqual(await queue.result(ep, ticket, { signal }));
    const again = await queue.submit(ep, { duration: 2 }, opts);
    expect(again.upstreamId).not.toBe(ticket.upstreamId);
  });

  it('fails at the result as the prompt asks: [[reject]] is a content refusal (client fault), [[fail]] an upstream 500', async () => {
    const { queue, advance } = queueAt();
    const rejected = await queue.submit(ep, { prompt: 'something [[reject]]' }, opts);
    const failed = await queue.submit(ep, { prompt: '[[fail]] please' }, opts);
    advance(5_000);
    expect((await queue.status(ep, rejected, { logs: false, signal })).state).toBe('COMPLETED');
    await expect(queue.result(ep, rejected, { signal })).rejects.toMatchObject({ status: 422, clientFault: true });
    await expect(queue.result(ep, failed, { signal })).rejects.toMatchObject({ status: 500, clientFault: false });
  });

  it('refuses out-of-range input at submit as the client fault, and an unknown id as not the client fault', async () => {
    const { queue } = queueAt();
    await expect(queue.submit(ep, { duration: 0 }, opts)).rejects.toMatchObject({ status: 422, clientFault: true });
    await expect(queue.submit(ep, { duration: 601 }, opts)).rejects.toMatchObject({ clientFault: true });
    await expect(queue.submit(ep, { n: 11 }, opts)).rejects.toMatchObject({ clientFault: true });
    await expect(queue.submit(ep, { duration: 'long' }, opts)).rejects.toMatchObject({ clientFault: true });
    await expect(queue.status(ep, { upstreamId: 'nope' }, { logs: false, signal })).rejects.toMatchObject({ status: 404, clientFault: false });
  });

  it('cancel resolves, before and after completion', async () => {
    const { queue, advance } = queueAt();
    const ticket = await queue.submit(ep, {}, opts);
    await expect(queue.cancel(ep, ticket, { signal })).resolves.toBeUndefined();
    advance(5_000);
    await expect(queue.cancel(ep, ticket, { signal })).resolves.toBeUndefined();
  });

  it('downloads an MP4 as long as the video asked for, and refuses URLs it did not make', async () => {
    const { queue, advance } = queueAt();
    const ticket = await queue.submit(ep, { duration: 7, n: 2 }, opts);
    advance(5_000);
    const result = await queue.result(ep, ticket, { signal });
    const file = await queue.download(ep, (result.videos as Array<{ url: string }>)[1].url, { signal });
    expect(file.contentType).toBe('video/mp4');
    expect(file.bytes.length).toBe((result.video as { file_size: number }).file_size);
    const mm = await musicMetadata();
    expect((await mm.parseBuffer(file.bytes, { mimeType: 'video/mp4', size: file.bytes.length })).format.duration).toBe(7);
    await expect(queue.download(ep, `simulated://video/${ticket.upstreamId}/2.mp4`, { signal })).rejects.toMatchObject({ status: 404 });
    await expect(queue.download(ep, 'https://example.com/x.mp4', { signal })).rejects.toMatchObject({ kind: 'protocol' });
  });
});

describe('silentMp4', () => {
  it.each([1, 2.5, 5, 600])('states a duration of %p s that music-metadata reads back', async (seconds) => {
    const mp4 = silentMp4(seconds);
    expect(mp4.subarray(4, 8).toString('latin1')).toBe('ftyp');
    expect(mp4.length).toBeLessThan(1_024 + seconds * 60);
    const meta = await (await musicMetadata()).parseBuffer(mp4, { mimeType: 'video/mp4', size: mp4.length }, { duration: true });
    expect(meta.format.duration).toBe(seconds);
  });

  it('nests its boxes exactly: every size adds up to the file', () => {
    const mp4 = silentMp4(5);
    const walk = (from: number, to: number, containers: Set<string>): string[] => {
      const types: string[] = [];
      for (let at = from; at < to; ) {
        const size = mp4.readUInt32BE(at);
        const type = mp4.toString('latin1', at + 4, at + 8);
        expect(size).toBeGreaterThanOrEqual(8);
        types.push(type);
        if (containers.has(type)) types.push(...walk(at + 8, at + size, containers).map((t) => `${type}/${t}`));
        at += size;
        expect(at).toBeLessThanOrEqual(to);
      }
      return types;
    };
    // The one chunk of frames starts right after mdat's header.
    expect(mp4.readUInt32BE(mp4.indexOf('stco') + 12)).toBe(mp4.indexOf('mdat') + 4);
    const types = walk(0, mp4.length, new Set(['moov', 'trak', 'mdia', 'minf', 'stbl', 'dinf']));
    expect(types).toEqual(
      expect.arrayContaining([
        'ftyp',
        'moov',
        'mdat',
        'moov/mvhd',
        'moov/trak',
        'moov/trak/tkhd',
        'moov/trak/mdia/mdhd',
        'moov/trak/mdia/hdlr',
        'moov/trak/mdia/minf/stbl/stsd',
      ]),
    );
  });

  it('refuses a length that is not positive', () => {
    expect(() => silentMp4(0)).toThrow(RangeError);
    expect(() => silentMp4(Number.NaN)).toThrow(RangeError);
  });
});
