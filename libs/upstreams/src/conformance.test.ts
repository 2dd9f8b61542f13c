import type { ResolvedEndpoint } from '@gateway/config';
import { createAnthropicProtocol } from './anthropic';
import { createCohereProtocol } from './cohere';
import { createFalProtocol } from './fal';
import { createOpenAIProtocol } from './openai';
import { type Capability, type ProviderKind, capabilityTable } from './protocols';
import {
  type Cassette,
  FAKE_ENV,
  type FakeUpstream,
  type Hit,
  callOptions,
  cassette,
  editJson,
  editSse,
  endpointAt,
  play,
  startFakeUpstream,
} from './testing';
import type { ChatChunk } from './types';

/**
 * The provider conformance suite: every HTTP protocol the capability table serves, held to the same contract on
 * bytes recorded from the provider's documented examples (testing/fixtures/<provider>/, each folder's README says
 * which example each file follows). docs/testing.md says how to add a protocol and its fixtures.
 */

/** Usage figures the protocols refused, as their MalformedUsage reports them. */
const reported: string[] = [];
const report = (_ep: ResolvedEndpoint, issue: string) => void reported.push(issue);
const openai = createOpenAIProtocol(FAKE_ENV, report);
const anthropic = createAnthropicProtocol(FAKE_ENV, report);
const cohere = createCohereProtocol(FAKE_ENV, report);
const fal = createFalProtocol(FAKE_ENV);

/** The recorded answer each request gets. */
type Replay = (hit: Hit) => Cassette;
/** A recorded answer changed for one case (usage taken out or garbled, the end marker dropped). */
type Edit = (c: Cassette) => Cassette;

/** What a call gives the route: the answer as the route reads it, and the usage it would bill (undefined: none). */
interface Read {
  answer: unknown;
  usage: unknown;
}

interface UsageRules {
  missing: Edit;
  malformed: Edit;
  /** Drop it and report it (the route then bills its own count), drop it silently, or refuse the whole answer. */
  onMalformed: 'dropped and reported' | 'dropped' | 'answer refused';
}

interface Row {
  name: string;
  /** The capability table's cell this row holds to its contract. */
  kind: ProviderKind;
  capability: Capability;
  answer: Replay;
  /** Where the first request goes, under the endpoint's base_url. */
  path: string;
  endpoint?: (fake: FakeUpstream) => ResolvedEndpoint;
  call(ep: ResolvedEndpoint): Promise<Read>;
  /** What the recorded answer reads as; usage is matched as a subset (providers add detail fields). */
  expected: Read;
  /** Recorded error answers: the client's fault (never failed over), and those the next endpoint should take. */
  clientFaults: Cassette[];
  failovers: Cassette[];
  /** Streams only: the recorded stream without its end marker ([DONE], message_stop). */
  withoutEnd?: Edit;
  /** How the protocol reads usage; `none` says why it reads none. */
  usage: UsageRules | { none: string };
}

const errors = (provider: string, ...statuses: number[]) => statuses.map((s) => cassette(provider, `error-${s}`));
const always =
  (c: Cassette): Replay =>
  () =>
    c;
const chat = { messages: [{ role: 'user', content: 'Hello!' }] };

async function readStream(stream: AsyncIterable<ChatChunk>): Promise<Read> {
  let content = '';
  let finish: string | null = null;
  let usage: unknown;
  for await (const c of stream) {
    content += c.choices[0]?.delta.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
    usage = c.usage ?? usage;
  }
  return { answer: { content, finish_reason: finish }, usage };
}

const withoutUsage = (j: { usage?: unknown }) => void delete j.usage;

const OPENAI_CHAT = cassette('openai', 'chat-completion');
const OPENAI_STREAM = cassette('openai', 'chat-completion-stream');
const ANTHROPIC_MESSAGE = cassette('anthropic', 'message');
const ANTHROPIC_STREAM = cassette('anthropic', 'message-stream');
const FAL_ID = '80e732af-660e-45cd-bd63-580e4f2a94cc';

/** fal answers three requests: the submit, the status poll and the result, each recorded apart. */
const falReplay =
  (status: Cassette = cassette('fal', 'status-completed')): Replay =>
  (hit) => {
    if (hit.method === 'POST') return cassette('fal', 'submit');
    return /\/status(\?|$)/.test(hit.path) ? status : cassette('fal', 'result');
  };

const rows: Row[] = [
  {
    name: 'openai chat',
    kind: 'openai',
    capability: 'text',
    answer: always(OPENAI_CHAT),
    path: '/v1/chat/completions',
    async call(ep) {
      const c = await openai.chat(ep, chat, callOptions());
      return { answer: { content: c.choices[0].message.content, finish_reason: c.choices[0].finish_reason }, usage: c.usage };
    },
    expected: {
      answer: { content: 'Hello! How can I assist you today?', finish_reason: 'stop' },
      usage: { prompt_tokens: 19, completion_tokens: 10, total_tokens: 29 },
    },
    clientFaults: errors('openai', 400),
    failovers: errors('openai', 429, 500, 503),
    usage: {
      missing: (c) => editJson(c, withoutUsage),
      malformed: (c) => editJson(c, (j) => void (j.usage.completion_tokens = -10)),
      onMalformed: 'dropped and reported',
    },
  },
  {
    name: 'openai chat stream',
    kind: 'openai',
    capability: 'text',
    answer: always(OPENAI_STREAM),
    path: '/v1/chat/completions',
    call: async (ep) => readStream(await openai.chatStream(ep, chat, callOptions())),
    expected: { answer: { content: 'Hello', finish_reason: 'stop' }, usage: { prompt_tokens: 19, completion_tokens: 10, total_tokens: 29 } },
    clientFaults: errors('openai', 400),
    failovers: errors('openai', 429, 500, 503),
    withoutEnd: (c) => editSse(c, (data) => (data === '[DONE]' ? null : data)),
    usage: {
      // The usage chunk carries nothing else: without usage, the stream's last chunk is the finish.
      missing: (c) => editSse(c, (data) => (data?.usage ? null : data)),
      malformed: (c) => editSse(c, (data) => (data?.usage ? { ...data, usage: { ...data.usage, prompt_tokens: '19' } } : data)),
      onMalformed: 'dropped and reported',
    },
  },
  {
    name: 'anthropic messages',
    kind: 'anthropic',
    capability: 'text',
    answer: always(ANTHROPIC_MESSAGE),
    path: '/v1/messages',
    async call(ep) {
      const c = await anthropic.chat(ep, chat, callOptions());
      return { answer: { content: c.choices[0].message.content, finish_reason: c.choices[0].finish_reason }, usage: c.usage };
    },
    expected: {
      answer: { content: 'Hi! My name is Claude.', finish_reason: 'stop' },
      usage: { prompt_tokens: 2095, completion_tokens: 503, total_tokens: 2598 },
    },
    clientFaults: errors('anthropic', 400),
    failovers: errors('anthropic', 429, 500, 529),
    usage: {
      missing: (c) => editJson(c, withoutUsage),
      malformed: (c) => editJson(c, (j) => void (j.usage.input_tokens = 20.95)),
      onMalformed: 'dropped and reported',
    },
  },
  {
    name: 'anthropic messages stream',
    kind: 'anthropic',
    capability: 'text',
    answer: always(ANTHROPIC_STREAM),
    path: '/v1/messages',
    call: async (ep) => readStream(await anthropic.chatStream(ep, chat, callOptions())),
    // message_start's input_tokens with message_delta's cumulative output_tokens.
    expected: { answer: { content: 'Hello!', finish_reason: 'stop' }, usage: { prompt_tokens: 25, completion_tokens: 15, total_tokens: 40 } },
    clientFaults: errors('anthropic', 400),
    failovers: errors('anthropic', 429, 500, 529),
    withoutEnd: (c) => editSse(c, (data) => (data?.type === 'message_stop' ? null : data)),
    usage: {
      missing: (c) =>
        editSse(c, (data) => {
          if (data?.type === 'message_start') delete data.message.usage;
          if (data?.type === 'message_delta') delete data.usage;
          return data;
        }),
      malformed: (c) => editSse(c, (data) => (data?.type === 'message_delta' ? { ...data, usage: { output_tokens: 2 ** 31 } } : data)),
      onMalformed: 'dropped and reported',
    },
  },
  {
    name: 'openai embeddings',
    kind: 'openai',
    capability: 'embedding',
    answer: always(cassette('openai', 'embeddings')),
    path: '/v1/embeddings',
    async call(ep) {
      const r = await openai.embed(ep, { input: ['The food was delicious and the waiter...'] }, callOptions());
      return { answer: r.data, usage: r.usage };
    },
    expected: { answer: [{ index: 0, embedding: [0.0023064255, -0.009327292, -0.0028842222] }], usage: { prompt_tokens: 8 } },
    clientFaults: errors('openai', 400),
    failovers: errors('openai', 429, 500, 503),
    usage: {
      missing: (c) => editJson(c, withoutUsage),
      malformed: (c) => editJson(c, (j) => void (j.usage.prompt_tokens = { value: 8 })),
      onMalformed: 'dropped and reported',
    },
  },
  {
    name: 'cohere rerank',
    kind: 'cohere',
    capability: 'rerank',
    answer: always(cassette('cohere', 'rerank')),
    path: '/v1/rerank',
    async call(ep) {
      // The five documents of Cohere's rerank example; the answer indexes into them.
      const documents = ['Carson City', 'Saipan', 'Capitalization', 'Washington, D.C.', 'Capital punishment'];
      const r = await cohere.rerank(ep, { query: 'What is the capital of the United States?', documents, top_n: 3 }, callOptions());
      return { answer: r.results, usage: r.usage };
    },
    expected: {
      answer: [
        { index: 3, relevance_score: 0.999071 },
        { index: 4, relevance_score: 0.7867867 },
        { index: 0, relevance_score: 0.32713068 },
      ],
      usage: { search_units: 1 },
    },
    clientFaults: errors('cohere', 400),
    failovers: errors('cohere', 429, 500, 503),
    usage: {
      missing: (c) => editJson(c, (j) => void delete j.meta.billed_units),
      malformed: (c) => editJson(c, (j) => void (j.meta.billed_units.search_units = -1)),
      onMalformed: 'dropped and reported',
    },
  },
  {
    name: 'openai images',
    kind: 'openai',
    capability: 'image',
    answer: always(cassette('openai', 'images-url')),
    path: '/v1/images/generations',
    async call(ep) {
      const r = await openai.generateImages(ep, { prompt: 'A cute baby sea otter', n: 2, size: '1024x1024' }, callOptions());
      return { answer: r.images, usage: undefined };
    },
    expected: {
      answer: [
        { kind: 'url', url: 'https://...' },
        { kind: 'url', url: 'https://...' },
      ],
      usage: undefined,
    },
    clientFaults: errors('openai', 400),
    failovers: errors('openai', 429, 500, 503),
    usage: { none: 'images are billed per image the answer holds' },
  },
  {
    name: 'openai speech',
    kind: 'openai',
    capability: 'speech',
    answer: always(cassette('openai', 'speech-wav')),
    path: '/v1/audio/speech',
    async call(ep) {
      const audio = await openai.speech(ep, { input: 'Hello', voice: 'alloy', responseFormat: 'wav', speed: 1 }, callOptions());
      const parts: Buffer[] = [];
      for await (const part of audio.body) parts.push(Buffer.from(part));
      return {
        answer: { contentType: audio.contentType, bytes: Buffer.concat(parts).equals(cassette('openai', 'speech-wav').body) },
        usage: undefined,
      };
    },
    expected: { answer: { contentType: 'audio/wav', bytes: true }, usage: undefined },
    clientFaults: errors('openai', 400),
    failovers: errors('openai', 429, 500, 503),
    usage: { none: 'speech is billed on the input characters, which the gateway counts itself' },
  },
  {
    name: 'openai transcriptions',
    kind: 'openai',
    capability: 'transcription',
    answer: always(cassette('openai', 'transcription-verbose')),
    path: '/v1/audio/transcriptions',
    async call(ep) {
      const req = {
        audio: Buffer.from('RIFF'),
        format: 'wav',
        responseFormat: 'verbose_json' as const,
        timestampGranularities: ['segment' as const],
      };
      const r = await openai.transcribe(ep, req, callOptions());
      return { answer: { contentType: r.contentType, text: JSON.parse(r.body).text }, usage: r.durationSeconds };
    },
    expected: {
      answer: {
        contentType: 'application/json',
        text: 'The beach was a popular spot on a hot summer day. People were swimming in the ocean, building sandcastles, and playing beach volleyball.',
      },
      usage: 8.470000267028809,
    },
    clientFaults: errors('openai', 400),
    failovers: errors('openai', 429, 500, 503),
    usage: {
      missing: (c) =>
        editJson(c, (j) => {
          delete j.duration;
          delete j.usage;
        }),
      malformed: (c) => editJson(c, (j) => ({ ...j, duration: '8.47', usage: { type: 'duration', seconds: -9 } })),
      onMalformed: 'dropped',
    },
  },
  {
    name: 'fal queue',
    kind: 'fal',
    capability: 'queue',
    answer: falReplay(),
    path: '/fal-ai/fast-sdxl',
    endpoint: (fake) => ({ ...endpointAt(new URL(fake.baseUrl).origin, { id: 'fal', kind: 'fal' }), upstreamModel: 'fal-ai/fast-sdxl' }),
    async call(ep) {
      const signal = new AbortController().signal;
      const ticket = await fal.submit(ep, { prompt: 'a cat' }, callOptions());
      const status = await fal.status(ep, ticket, { logs: true, signal });
      const output = await fal.result(ep, ticket, { signal });
      return { answer: { id: ticket.upstreamId, state: status.state, logs: status.logs, output }, usage: status.inferenceTime ?? undefined };
    },
    expected: {
      answer: {
        id: FAL_ID,
        state: 'COMPLETED',
        logs: [{ message: '2020-05-04 14:00:00.000000', level: 'INFO', timestamp: '2020-05-04T14:00:00.000000Z' }],
        output: JSON.parse(cassette('fal', 'result').body.toString('utf8')),
      },
      usage: 2.1,
    },
    clientFaults: errors('fal', 400, 422),
    failovers: errors('fal', 429, 500),
    usage: {
      missing: (c) => editJson(c, (j) => void delete j.metrics),
      malformed: (c) => editJson(c, (j) => void (j.metrics && (j.metrics.inference_time = 'two seconds'))),
      // The status schema holds inference_time to a number: a garbled one fails the poll, and the worker polls again.
      onMalformed: 'answer refused',
    },
  },
];

describe('every HTTP protocol the capability table serves is in the conformance suite', () => {
  it('has a row for each (kind, capability) cell but the offline simulated kind', () => {
    const served = Object.entries(capabilityTable({}))
      .filter(([kind]) => kind !== 'simulated')
      .flatMap(([kind, row]) =>
        Object.entries(row)
          .filter(([, protocol]) => protocol !== null)
          .map(([capability]) => `${kind} ${capability}`),
      );
    expect([...new Set(rows.map((r) => `${r.kind} ${r.capability}`))].sort()).toEqual(served.sort());
  });
});

describe.each(rows)('$name conformance', (row) => {
  let fake: FakeUpstream;
  let replay: Replay;
  let cut = false;
  beforeAll(async () => {
    fake = await startFakeUpstream((hit, res) => {
      const c = replay(hit);
      play(res, c, cut ? { cutAt: Math.floor(c.body.length / 2) } : {});
    });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    replay = row.answer;
    cut = false;
    reported.length = 0;
    fake.hits.length = 0;
  });

  const ep = () => (row.endpoint ? row.endpoint(fake) : endpointAt(fake.baseUrl, { id: row.kind, kind: row.kind }));
  const replaying = (edit: Edit) => {
    const answer = row.answer;
    replay = (hit) => edit(answer(hit));
  };
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e,
    );

  it('reads the recorded answer, usage included, from the documented path', async () => {
    const read = await row.call(ep());
    expect(read.answer).toEqual(row.expected.answer);
    if (row.expected.usage === undefined) expect(read.usage).toBeUndefined();
    else if (typeof row.expected.usage === 'object') expect(read.usage).toMatchObject(row.expected.usage as object);
    else expect(read.usage).toBe(row.expected.usage);
    expect(fake.hits[0]?.path).toBe(row.path);
    expect(reported).toEqual([]);
  });

  it('fails over when the upstream breaks off mid-answer', async () => {
    cut = true;
    const err = await failure(row.call(ep()));
    expect(err).toMatchObject({ name: 'UpstreamError', kind: 'broken_stream', clientFault: false });
  });

  it('takes a 4xx about the request as the client fault, quoting the upstream without its address', async () => {
    for (const answer of row.clientFaults) {
      replay = () => answer;
      const err = await failure(row.call(ep()));
      expect(err).toMatchObject({ name: 'UpstreamError', kind: 'status', status: answer.status, clientFault: true });
      expect((err as Error).message).toMatch(new RegExp(`^upstream answered ${answer.status}: .+`));
      expect((err as Error).message).not.toContain('127.0.0.1');
    }
  });

  it('fails over on 429 and 5xx', async () => {
    expect(row.failovers.map((c) => c.status)).toContain(429);
    for (const answer of row.failovers) {
      replay = () => answer;
      const err = await failure(row.call(ep()));
      expect(err).toMatchObject({ name: 'UpstreamError', kind: 'status', status: answer.status, clientFault: false });
    }
  });

  const { withoutEnd, usage } = row;
  if (withoutEnd) {
    it('breaks the stream when it ends without its end marker', async () => {
      replaying(withoutEnd);
      const err = await failure(row.call(ep()));
      expect(err).toMatchObject({ name: 'UpstreamError', kind: 'broken_stream', clientFault: false });
    });
  }

  // A protocol whose answer carries no usage the route bills has nothing more to hold to; `none` says why.
  if ('none' in usage) return;

  it('reads missing usage as none, the answer unchanged', async () => {
    replaying(usage.missing);
    const read = await row.call(ep());
    expect(read).toEqual({ answer: row.expected.answer, usage: undefined });
    expect(reported).toEqual([]);
  });

  if (usage.onMalformed === 'answer refused') {
    it('refuses an answer whose usage is malformed, as a protocol failure that fails over', async () => {
      replaying(usage.malformed);
      const err = await failure(row.call(ep()));
      expect(err).toMatchObject({ name: 'UpstreamError', kind: 'protocol', clientFault: false });
    });
  } else {
    const reports = usage.onMalformed === 'dropped and reported';
    it(`drops malformed usage${reports ? ' and reports it' : ''}, the answer unchanged`, async () => {
      replaying(usage.malformed);
      const read = await row.call(ep());
      expect(read).toEqual({ answer: row.expected.answer, usage: undefined });
      expect(reported.length > 0).toBe(reports);
    });
  }
});
