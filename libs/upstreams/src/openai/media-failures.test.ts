import type http from 'node:http';
import { createOpenAIProtocol } from '.';
import { UpstreamError } from '../upstream-error';
import { FAKE_ENV, callOptions, endpointAt, json, startFakeUpstream, type FakeUpstream } from '../testing/fake-upstream';

/** Each media call, made against `baseUrl` with an optional timeout. */
const protocol = createOpenAIProtocol(FAKE_ENV);
const calls = {
  images: (baseUrl: string, timeout_ms?: number) =>
    protocol.generateImages(endpointAt(baseUrl, { timeout_ms }), { prompt: 'p', n: 1 }, callOptions()),
  speech: (baseUrl: string, timeout_ms?: number) =>
    protocol.speech(endpointAt(baseUrl, { timeout_ms }), { input: 'hi', voice: 'alloy', responseFormat: 'mp3', speed: 1 }, callOptions()),
  transcription: (baseUrl: string, timeout_ms?: number) =>
    protocol.transcribe(endpointAt(baseUrl, { timeout_ms }), { audio: Buffer.from('x'), format: 'wav', responseFormat: 'json' }, callOptions()),
};

describe.each(Object.entries(calls))('openai %s failures', (_name, call) => {
  let fake: FakeUpstream;
  let respond: (res: http.ServerResponse) => void;
  beforeAll(async () => {
    fake = await startFakeUpstream((_hit, res) => respond(res));
  });
  afterAll(() => fake.close());

  const hostOf = () => new URL(fake.baseUrl).host;
  const failure = async (timeout_ms?: number) => {
    const err = await call(fake.baseUrl, timeout_ms).then(
      () => undefined,
      (e) => e,
    );
    expect(err).toBeInstanceOf(UpstreamError);
    // Client-fault messages reach the client; none may name where the upstream lives.
    expect(err.message).not.toContain(hostOf());
    return err;
  };

  it.each([500, 502, 503, 429])('fails over on %i: a status failure, not the client fault', async (status) => {
    respond = (res) => json(res, status, { error: { message: 'busy' } });
    expect(await failure()).toMatchObject({ kind: 'status', status, clientFault: false });
  });

  it.each([400, 413, 422])("does not fail over on %i: the client's own fault, with the upstream's reason", async (status) => {
    respond = (res) => json(res, status, { error: { message: 'prompt refused' } });
    expect(await failure()).toMatchObject({ kind: 'status', status, clientFault: true, message: `upstream answered ${status}: prompt refused` });
  });

  it('fails over as a timeout when no head arrives within timeout_ms', async () => {
    respond = () => {
      /* never answers */
    };
    expect(await failure(100)).toMatchObject({ kind: 'timeout', clientFault: false });
  });

  it('fails over as a connect failure when nothing listens at base_url', async () => {
    const closed = await startFakeUpstream(() => undefined);
    await closed.close();
    const err = await call(closed.baseUrl).catch((e) => e);
    expect(err).toMatchObject({ kind: 'connect', clientFault: false });
    expect(err.message).not.toContain(new URL(closed.baseUrl).host);
  });
});
