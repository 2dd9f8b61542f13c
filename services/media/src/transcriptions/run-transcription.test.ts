import { spendFixture, testContext, type SpendFixture } from '@gateway/spend/testing';
import { type TranscriptionProtocol, type TranscriptionResult, UpstreamError } from '@gateway/upstreams';
import type { AudioDeps } from '../audio-models';
import { runTranscription } from './run-transcription';

/** 0.0001 USD a second = 100,000 nano-USD. */
const NANO_PER_SECOND = 100_000n;

describe('transcription flow', () => {
  let fx: SpendFixture;
  afterEach(() => fx?.close());

  async function world(answers: Record<string, TranscriptionResult | Error>) {
    fx = await spendFixture([{ id: 'acme/stt', category: 'audio', second: '0.0001', endpoints: Object.keys(answers) }]);
    const tried: string[] = [];
    const protocol: TranscriptionProtocol = {
      async transcribe(ep) {
        tried.push(ep.key);
        const a = answers[ep.key];
        if (a instanceof Error) throw a;
        return a;
      },
    };
    const deps: AudioDeps<TranscriptionProtocol> = { ...fx.deps, protocolOf: () => protocol };
    return { deps, tried };
  }

  const call = (measuredSeconds: number) => ({
    slug: 'acme/stt',
    measuredSeconds,
    request: { audio: Buffer.from('RIFF'), format: 'wav', responseFormat: 'json' as const },
  });
  const json = (durationSeconds?: number): TranscriptionResult => ({ contentType: 'application/json', body: '{"text":"hi"}', durationSeconds });

  it('holds the measured seconds, per started second, and charges the duration the upstream reports', async () => {
    const { deps } = await world({ 'p1/stt': json(2.2) });
    const { result, cost } = await runTranscription(testContext(), deps, call(3.4));
    expect(result.body).toBe('{"text":"hi"}');
    expect(cost).toBe('0.0003');
    await fx.billing.delivered();
    expect(fx.billing.requests.map((r) => r.amountNano)).toEqual([4n * NANO_PER_SECOND]);
    expect(fx.billing.closes).toMatchObject([
      { outcome: 'settle', charge_nano: String(3n * NANO_PER_SECOND), record: { status: 'succeeded', usage_estimated: false } },
    ]);
  });

  it('charges the measured seconds when the upstream reports none, and the record says the figure is estimated', async () => {
    const { deps } = await world({ 'p1/stt': json(undefined) });
    expect((await runTranscription(testContext(), deps, call(1.5))).cost).toBe('0.0002');
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ charge_nano: String(2n * NANO_PER_SECOND), record: { usage_estimated: true } }]);
  });

  it('reads a reported 0 s as no report, not as free', async () => {
    const { deps } = await world({ 'p1/stt': json(0) });
    expect((await runTranscription(testContext(), deps, call(1))).cost).toBe('0.0001');
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ record: { usage_estimated: true } }]);
  });

  it('caps a reported duration longer than the measured one at the hold, keeping the upstream figure on the record', async () => {
    const { deps } = await world({ 'p1/stt': json(9.1) });
    expect((await runTranscription(testContext(), deps, call(2))).cost).toBe('0.0002');
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([
      { charge_nano: String(2n * NANO_PER_SECOND), record: { capped_from_nano: String(10n * NANO_PER_SECOND), usage_estimated: false } },
    ]);
  });

  it('fails over on a 5xx and charges only the endpoint that answered', async () => {
    const { deps, tried } = await world({ 'p1/stt': new UpstreamError('status', 'upstream answered 500', 500), 'p2/stt': json(1) });
    await runTranscription(testContext(), deps, call(1));
    expect(tried).toEqual(['p1/stt', 'p2/stt']);
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'settle', record: { attempts: 2, fallback_used: true } }]);
  });

  it('releases the hold when every endpoint fails', async () => {
    const { deps } = await world({ 'p1/stt': new UpstreamError('status', 'upstream answered 503', 503) });
    await expect(runTranscription(testContext(), deps, call(1))).rejects.toMatchObject({ code: 'upstream_unavailable' });
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'release', charge_nano: '0' }]);
  });
});
