/**
 * The scenarios: what each target is sent, and how an answer is recognised as the upstream's. A gateway request and
 * its direct counterpart (the upstream call the gateway makes for it) are listed together, so the overhead is always
 * measured against the matching direct call. Portkey is sent the OpenAI-shaped request where it has one.
 */
import type { BenchOptions } from './options';

export interface Req {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
}

/** The upstream calls, as the direct target is sent them. */
export type DirectKind = 'chat' | 'chat-stream' | 'messages' | 'embeddings' | 'rerank' | 'image' | 'file';

export interface Scenario {
  name: string;
  /** Measured with the streaming client (first byte and last byte) instead of autocannon. */
  stream: boolean;
  /** Run at 1 connection as well as at BENCH_CONNECTIONS. */
  alsoOneConnection: boolean;
  /** Seconds per figure: BENCH_SECONDS for non-streamed chat, BENCH_ROUTE_SECONDS for the rest. */
  long: boolean;
  /** The gateway's request; 'file' is one generated file's /v1/files URL, found at run time. */
  gateway: Req | 'file';
  direct: DirectKind;
  portkey?: Req;
  /** Why an answer is not the upstream's, or undefined when it is. */
  check(status: number, text: string): string | undefined;
}

const messages = [{ role: 'user', content: 'ping' }];
const post = (path: string, body: unknown): Req => ({ method: 'POST', path, body });

export const DIRECT: Record<DirectKind, Req> = {
  chat: post('/v1/chat/completions', { model: 'echo', messages, max_tokens: 16 }),
  // The gateway asks the upstream for the usage chunk; the direct call asks the same.
  'chat-stream': post('/v1/chat/completions', { model: 'echo', messages, max_tokens: 16, stream: true, stream_options: { include_usage: true } }),
  messages: post('/v1/messages', { model: 'echo', max_tokens: 16, messages }),
  embeddings: post('/v1/embeddings', { model: 'echo', input: 'ping' }),
  rerank: post('/v1/rerank', { model: 'echo', query: 'ping', documents: ['pong', 'ping'] }),
  image: post('/v1/images/generations', { model: 'echo', prompt: 'ping' }),
  file: { method: 'GET', path: '/files/bench.png' },
};

const json = (text: string): any => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};
const expect = (status: number, ok: boolean, text: string) =>
  status !== 200 ? `status ${status}: ${text.slice(0, 200)}` : ok ? undefined : `unexpected answer: ${text.slice(0, 200)}`;

/** The text of a chat stream's deltas, or undefined when the stream did not end with [DONE]. */
export function streamedContent(text: string): string | undefined {
  let content = '';
  let done = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (data === '[DONE]') done = true;
    else content += json(data)?.choices?.[0]?.delta?.content ?? '';
  }
  return done ? content : undefined;
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'chat',
    stream: false,
    alsoOneConnection: true,
    long: true,
    gateway: post('/v1/chat/completions', { model: 'bench/echo', messages, max_tokens: 16 }),
    direct: 'chat',
    portkey: DIRECT.chat,
    check: (s, t) => expect(s, json(t)?.choices?.[0]?.message?.content === 'pong', t),
  },
  {
    name: 'chat-stream',
    stream: true,
    alsoOneConnection: true,
    long: false,
    gateway: post('/v1/chat/completions', { model: 'bench/echo', messages, max_tokens: 16, stream: true }),
    direct: 'chat-stream',
    portkey: DIRECT['chat-stream'],
    check: (s, t) => expect(s, streamedContent(t) === 'pong', t),
  },
  {
    name: 'embeddings',
    stream: false,
    alsoOneConnection: true,
    long: false,
    gateway: post('/v1/embeddings', { model: 'bench/embed', input: 'ping', encoding_format: 'float' }),
    direct: 'embeddings',
    portkey: DIRECT.embeddings,
    check: (s, t) => expect(s, json(t)?.data?.[0]?.embedding?.length === 16, t),
  },
  {
    name: 'completions',
    stream: false,
    alsoOneConnection: false,
    long: false,
    gateway: post('/v1/completions', { model: 'bench/echo', prompt: 'ping', max_tokens: 16 }),
    direct: 'chat',
    check: (s, t) => expect(s, json(t)?.choices?.[0]?.text === 'pong', t),
  },
  {
    name: 'responses',
    stream: false,
    alsoOneConnection: false,
    long: false,
    gateway: post('/v1/responses', { model: 'bench/echo', input: 'ping', max_output_tokens: 16 }),
    direct: 'chat',
    check: (s, t) => expect(s, t.includes('pong'), t),
  },
  {
    name: 'messages',
    stream: false,
    alsoOneConnection: false,
    long: false,
    gateway: post('/v1/messages', { model: 'bench/claude', max_tokens: 16, messages }),
    direct: 'messages',
    check: (s, t) => expect(s, json(t)?.content?.[0]?.text === 'pong', t),
  },
  {
    name: 'rerank',
    stream: false,
    alsoOneConnection: false,
    long: false,
    gateway: post('/v1/rerank', { model: 'bench/rerank', query: 'ping', documents: ['pong', 'ping'] }),
    direct: 'rerank',
    check: (s, t) => expect(s, json(t)?.results?.length === 2, t),
  },
  {
    name: 'image',
    stream: false,
    alsoOneConnection: false,
    long: false,
    gateway: post('/v1/images/generations', { model: 'bench/image', prompt: 'ping' }),
    direct: 'image',
    portkey: DIRECT.image,
    check: (s, t) => expect(s, typeof json(t)?.data?.[0]?.url === 'string', t),
  },
  {
    // A 64 KiB generated file streamed through the gateway from its origin.
    name: 'file',
    stream: false,
    alsoOneConnection: false,
    long: false,
    gateway: 'file',
    direct: 'file',
    check: (s, t) => expect(s, t.length === 64 * 1024, `${t.length} bytes`),
  },
];

export function selectScenarios(opts: BenchOptions): Scenario[] {
  for (const r of opts.routes)
    if (!SCENARIOS.some((s) => s.name === r))
      throw new Error(`BENCH_ROUTES: unknown scenario ${r} (known: ${SCENARIOS.map((s) => s.name).join(', ')})`);
  return SCENARIOS.filter((s) => opts.routes.includes(s.name));
}

export const connectionsOf = (s: Scenario, opts: BenchOptions): number[] =>
  s.alsoOneConnection && opts.connections !== 1 ? [opts.connections, 1] : [opts.connections];
export const secondsOf = (s: Scenario, opts: BenchOptions): number => (s.long ? opts.seconds : opts.routeSeconds);
