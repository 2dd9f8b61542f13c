import { charge as chargeOf, formatUsd } from '@gateway/money';
import { spendFixture, testContext, type SpendFixture } from '@gateway/spend/testing';
import { type SpeechProtocol, type SpeechRequest, UpstreamError } from '@gateway/upstreams';
import type { AudioDeps } from '../audio-models';
import type { AudioClient } from './audio-client';
import { runSpeech } from './run-speech';

/** How one fake endpoint answers: audio chunks, then perhaps a break; or a failure before its head. */
interface Voice {
  chunks?: string[];
  breakWith?: Error;
  failWith?: Error;
  contentType?: string;
}

/** A speech upstream without HTTP that, like a torn-down connection, stops once the signal aborts. */
function fakeSpeech(voices: Record<string, Voice>) {
  const tried: string[] = [];
  const protocol: SpeechProtocol = {
    async speech(ep, _req, opts) {
      tried.push(ep.key);
      const v = voices[ep.key];
      if (!v) throw new UpstreamError('connect', `nothing listens at ${ep.key}`);
      if (v.failWith) throw v.failWith;
      return {
        contentType: v.contentType ?? 'audio/wav',
        body: (async function* () {
          for (const c of v.chunks ?? []) {
            opts.signal?.throwIfAborted();
            yield Buffer.from(c);
          }
          if (v.breakWith) throw v.breakWith;
        })(),
      };
    },
  };
  return { protocol, tried };
}

/** The client's side: what it was sent, and a way to leave after `leaveAfter` chunks. */
function fakeClient(leaveAfter = Number.POSITIVE_INFINITY) {
  const controller = new AbortController();
  const seen = { head: undefined as { contentType: string; cost: string } | undefined, chunks: [] as string[], ended: false, cut: false };
  const client: AudioClient = {
    signal: controller.signal,
    open: (head) => void (seen.head = head),
    async write(chunk) {
      controller.signal.throwIfAborted();
      seen.chunks.push(Buffer.from(chunk).toString());
      if (seen.chunks.length >= leaveAfter) controller.abort(new Error('client left'));
    },
    end: () => void (seen.ended = true),
    cut: () => void (seen.cut = true),
  };
  return { client, seen };
}

const request = (input: string): SpeechRequest => ({ input, voice: 'alloy', responseFormat: 'wav', speed: 1 });

describe('speech flow', () => {
  let fx: SpendFixture;
  afterEach(() => fx?.close());

  async function world(endpoints: string[], voices: Record<string, Voice>) {
    fx = await spendFixture([{ id: 'acme/tts', category: 'audio', character: '0.000015', endpoints }]);
    const upstream = fakeSpeech(voices);
    const deps: AudioDeps<SpeechProtocol> = { ...fx.deps, protocolOf: () => upstream.protocol };
    const charge = (input: string) => chargeOf([[[...input].length, fx.deps.registry.get('acme/tts')!.rates.character]]);
    return { deps, upstream, charge };
  }

  it('holds and charges characters × rate, announcing the exact charge before the first byte, and settles at the end', async () => {
    const input = 'Hello, world';
    const { deps, charge } = await world(['p1/tts'], { 'p1/tts': { chunks: ['RIFF', 'data'], contentType: 'audio/x-wav' } });
    const { client, seen } = fakeClient();
    await runSpeech(testContext(), deps, { slug: 'acme/tts', request: request(input) }, client);
    expect(charge(input)).toBe(180_000n); // 12 × 0.000015 USD
    expect(seen).toEqual({ head: { contentType: 'audio/x-wav', cost: formatUsd(180_000n) }, chunks: ['RIFF', 'data'], ended: true, cut: false });
    await fx.billing.delivered();
    expect(fx.billing.requests.map((r) => r.amountNano)).toEqual([180_000n]);
    expect(fx.billing.closes).toMatchObject([{ outcome: 'settle', charge_nano: '180000', record: { status: 'succeeded', streamed: true } }]);
  });

  it('fails over when an upstream accepts and dies before its first byte, and charges only the one that answered', async () => {
    const { deps, upstream } = await world(['p1/tts', 'p2/tts'], {
      'p1/tts': { chunks: [], breakWith: new UpstreamError('broken_stream', 'upstream connection broke') },
      'p2/tts': { chunks: ['audio'] },
    });
    const { client, seen } = fakeClient();
    await runSpeech(testContext(), deps, { slug: 'acme/tts', request: request('Hi') }, client);
    expect(upstream.tried).toEqual(['p1/tts', 'p2/tts']);
    expect(seen.chunks).toEqual(['audio']);
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'settle', record: { attempts: 2, fallback_used: true } }]);
  });

  it('fails over when an upstream answers 2xx with no audio at all', async () => {
    const { deps, upstream } = await world(['p1/tts', 'p2/tts'], { 'p1/tts': { chunks: [] }, 'p2/tts': { chunks: ['audio'] } });
    const { client, seen } = fakeClient();
    await runSpeech(testContext(), deps, { slug: 'acme/tts', request: request('Hi') }, client);
    expect(upstream.tried).toEqual(['p1/tts', 'p2/tts']);
    expect(seen.ended).toBe(true);
  });

  it('opens nothing and releases when every upstream fails, so the client gets a JSON error', async () => {
    const { deps } = await world(['p1/tts'], { 'p1/tts': { failWith: new UpstreamError('status', 'upstream answered 503', 503) } });
    const { client, seen } = fakeClient();
    await expect(runSpeech(testContext(), deps, { slug: 'acme/tts', request: request('Hi') }, client)).rejects.toMatchObject({
      code: 'upstream_unavailable',
    });
    expect(seen.head).toBeUndefined();
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'release', charge_nano: '0', record: { error_code: 'upstream_unavailable' } }]);
  });

  it('releases a stream that breaks after its first byte and cuts the connection, so the truncated audio is not taken as whole', async () => {
    const { deps } = await world(['p1/tts', 'p2/tts'], {
      'p1/tts': { chunks: ['RIFF', 'da'], breakWith: new UpstreamError('broken_stream', 'upstream connection broke') },
      'p2/tts': { chunks: ['never asked'] },
    });
    const { client, seen } = fakeClient();
    await runSpeech(testContext(), deps, { slug: 'acme/tts', request: request('Hello') }, client);
    expect(seen).toMatchObject({ chunks: ['RIFF', 'da'], ended: false, cut: true });
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([
      { outcome: 'release', charge_nano: '0', record: { status: 'failed', error_code: 'upstream_unavailable', attempts: 1 } },
    ]);
  });

  it('charges a client that leaves mid-stream as announced (the whole input), recorded as failed with client_closed', async () => {
    const input = 'A longer sentence to say';
    const { deps, charge } = await world(['p1/tts'], { 'p1/tts': { chunks: ['one', 'two', 'three'] } });
    const { client, seen } = fakeClient(1);
    await runSpeech(testContext(), deps, { slug: 'acme/tts', request: request(input) }, client);
    expect(seen).toMatchObject({ chunks: ['one'], ended: false, cut: false });
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([
      { outcome: 'settle', charge_nano: charge(input).toString(), record: { status: 'failed', error_code: 'client_closed' } },
    ]);
  });

  it("does not fail over on the upstream's 400 (a format it cannot make), and releases", async () => {
    const { deps, upstream } = await world(['p1/tts', 'p2/tts'], {
      'p1/tts': { failWith: new UpstreamError('status', 'simulated speech comes only as wav or pcm', 400) },
      'p2/tts': { chunks: ['never asked'] },
    });
    const { client } = fakeClient();
    await expect(runSpeech(testContext(), deps, { slug: 'acme/tts', request: request('Hi') }, client)).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect(upstream.tried).toEqual(['p1/tts']);
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'release', record: { error_code: 'invalid_request' } }]);
  });
});
