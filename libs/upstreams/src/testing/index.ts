/**
 * @gateway/upstreams/testing: the one home of the upstream fakes, for any package's tests (never product code).
 * An HTTP provider on 127.0.0.1 (fake-upstream), recorded provider answers to replay on it (cassette, fixtures/),
 * a fal queue, and a text protocol without HTTP for the flows that call one.
 */
export { FAKE_ENV, callOptions, endpointAt, json, startFakeUpstream, type FakeUpstream, type Hit } from './fake-upstream';
export { FIXTURES, cassette, editJson, editSse, play, withBody, type Cassette, type PlayOptions } from './cassette';
export { MALFORMED_COUNTS } from './malformed-usage';
export { startFakeFal, type FakeFal, type FakeFalJob, type FakeFalOptions, type FalRequest } from './fake-fal';
export { answers, fails, fakeTextProtocol, type Behaviour, type FakeTextProtocol, type Reply, type UpstreamCall } from './fake-text-protocol';
export { wavHeader } from '../simulated/wav';
export { solidPng } from '../simulated/png';
export { mp3FrameAt, mp3Frames } from './mp3-frames';
export { stopTokenWorker, tokenWorkerRunning } from '../tokens';
