import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { wavHeader } from '@gateway/upstreams/testing';

/**
 * The fuzzed gateway's catalogue: the built-in demo models (every category, simulated upstreams), a body limit
 * small enough that bodies past it stay cheap to send, and meters the fuzzing never reaches, so every refusal is
 * the input's and never the meter's.
 */
export const BODY_LIMIT = 96 * 1024;
export const AUDIO_BODY_LIMIT = 128 * 1024;

export function fuzzConfig(demo: unknown) {
  return {
    ...(demo as object),
    limits: {
      max_request_body: `${BODY_LIMIT}b`,
      max_audio_body: `${AUDIO_BODY_LIMIT}b`,
      public_rate_limit: { requests: 1_000_000, interval: '60s' },
      job_concurrency: 10,
    },
    status: { enabled: false },
  };
}

/** A tenth of a second of silence, the smallest recording the transcription route takes. */
const WAV = Buffer.concat([wavHeader(8000, 1, 1600), Buffer.alloc(1600)]).toString('base64');

// Values of the wrong JSON type for a field, each family excluding every type the field accepts.
const scalarsBut = (...excluded: Array<'string' | 'number' | 'boolean' | 'null'>) =>
  [
    excluded.includes('string') ? undefined : fc.string({ maxLength: 20 }),
    excluded.includes('number') ? undefined : fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
    excluded.includes('boolean') ? undefined : fc.boolean(),
    excluded.includes('null') ? undefined : fc.constant(null),
  ].filter((a): a is fc.Arbitrary<any> => a !== undefined);
const anObject = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const anArrayOfScalars = fc.array(fc.oneof(fc.integer(), fc.boolean(), fc.constant(null)), { maxLength: 4 });

export const wrong = {
  /** Not a string. */
  string: fc.oneof(...scalarsBut('string'), anArrayOfScalars, anObject),
  /** Not a list (nor a string, where a field takes either). */
  list: fc.oneof(...scalarsBut('string'), anObject),
  /** Not a JSON object. */
  object: fc.oneof(...scalarsBut(), anArrayOfScalars),
  /** Not a positive integer. */
  positiveInt: fc.oneof(
    ...scalarsBut('number'),
    anArrayOfScalars,
    anObject,
    fc.integer({ max: 0 }),
    fc.double({ min: 0.01, max: 1e6, noNaN: true }).filter((d) => !Number.isInteger(d)),
  ),
  /** Not an integer from 1 to 10 (n of the queue). */
  oneToTen: fc.oneof(...scalarsBut('number'), anObject, fc.integer({ max: 0 }), fc.integer({ min: 11 }), fc.constant(2.5)),
  /** Not a number of seconds from 1 to 600. */
  duration: fc.oneof(
    ...scalarsBut('number'),
    anObject,
    fc.double({ max: 0.99, noNaN: true }),
    fc.double({ min: 600.01, noNaN: true, noDefaultInfinity: true }),
  ),
  /** Not an https URL. */
  httpsUrl: fc.oneof(
    ...scalarsBut('string'),
    fc.constantFrom('http://example.com/hook', 'ftp://example.com/x', 'not a url', 'javascript:alert(1)', '//example.com', ''),
  ),
  /** Not the JSON-RPC version string "2.0". */
  jsonrpc: fc.oneof(fc.constantFrom('1.0', '2', '2.00', ' 2.0', 2), ...scalarsBut('string'), anObject),
  /** Not a JSON-RPC id (string, number or null). */
  rpcId: fc.oneof(fc.boolean(), anObject, anArrayOfScalars),
};

/** One field the gateway checks: a valid value, and values it must refuse. */
interface Field {
  valid: unknown;
  wrong: fc.Arbitrary<unknown>;
}

export interface BodyRoute {
  /** The route as the report names it. */
  name: string;
  method: 'POST' | 'PUT';
  path: string;
  /** A body the route accepts (the controls prove it), from which every fuzzed body is derived. */
  valid: Record<string, unknown>;
  /** The fields a wrong type of which must be refused, with their wrong values. */
  checked: Record<string, Field>;
  /** The body limit this route reads up to. */
  limit: number;
  /** /v1/mcp: its session errors are JSON-RPC (the spec's exception), and the control answers without money. */
  mcp?: boolean;
  /** The field whose string value the mutations that need one (invalid UTF-8) cut into. */
  textField: string;
}

const model = (slug: string): Field => ({ valid: slug, wrong: wrong.string });
const queueFields: Record<string, Field> = {
  prompt: { valid: 'a lighthouse at dusk', wrong: wrong.string },
  n: { valid: 1, wrong: wrong.oneToTen },
  duration: { valid: 1, wrong: wrong.duration },
  webhook_url: { valid: 'https://example.com/hook', wrong: wrong.httpsUrl },
};
const queueBody = { prompt: 'a lighthouse at dusk', duration: 1 };

export const BODY_ROUTES: BodyRoute[] = [
  {
    name: 'POST /v1/chat/completions',
    method: 'POST',
    path: '/v1/chat/completions',
    valid: { model: 'demo/chat-small', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5 },
    checked: { model: model('demo/chat-small'), messages: { valid: [{ role: 'user', content: 'hello there' }], wrong: wrong.list } },
    limit: BODY_LIMIT,
    textField: 'hello there',
  },
  {
    name: 'POST /v1/completions',
    method: 'POST',
    path: '/v1/completions',
    valid: { model: 'demo/chat-small', prompt: 'hello there', max_tokens: 5 },
    checked: { model: model('demo/chat-small'), prompt: { valid: 'hello there', wrong: wrong.list } },
    limit: BODY_LIMIT,
    textField: 'hello there',
  },
  {
    name: 'POST /v1/responses',
    method: 'POST',
    path: '/v1/responses',
    valid: { model: 'demo/chat-small', input: 'hello there', max_output_tokens: 5 },
    checked: { model: model('demo/chat-small'), input: { valid: 'hello there', wrong: wrong.list } },
    limit: BODY_LIMIT,
    textField: 'hello there',
  },
  {
    name: 'POST /v1/messages',
    method: 'POST',
    path: '/v1/messages',
    valid: { model: 'demo/chat-small', max_tokens: 5, messages: [{ role: 'user', content: 'hello there' }] },
    checked: {
      model: model('demo/chat-small'),
      max_tokens: { valid: 5, wrong: wrong.positiveInt },
      messages: { valid: [{ role: 'user', content: 'hello there' }], wrong: wrong.list },
    },
    limit: BODY_LIMIT,
    textField: 'hello there',
  },
  {
    name: 'POST /v1/embeddings',
    method: 'POST',
    path: '/v1/embeddings',
    valid: { model: 'demo/embed-small', input: 'hello there' },
    checked: { model: model('demo/embed-small'), input: { valid: 'hello there', wrong: wrong.list } },
    limit: BODY_LIMIT,
    textField: 'hello there',
  },
  {
    name: 'POST /v1/rerank',
    method: 'POST',
    path: '/v1/rerank',
    valid: { model: 'demo/rerank-small', query: 'hello there', documents: ['an apple pie', 'a blue sky'] },
    checked: {
      model: model('demo/rerank-small'),
      query: { valid: 'hello there', wrong: wrong.string },
      documents: { valid: ['an apple pie', 'a blue sky'], wrong: wrong.list },
    },
    limit: BODY_LIMIT,
    textField: 'hello there',
  },
  ...['/v1/images/generations', '/v1/images'].map(
    (path): BodyRoute => ({
      name: `POST ${path}`,
      method: 'POST',
      path,
      valid: { model: 'demo/image-small', prompt: 'hello there', n: 1 },
      checked: { model: model('demo/image-small'), prompt: { valid: 'hello there', wrong: wrong.string } },
      limit: BODY_LIMIT,
      textField: 'hello there',
    }),
  ),
  {
    name: 'POST /v1/audio/speech',
    method: 'POST',
    path: '/v1/audio/speech',
    valid: { model: 'demo/speech-small', input: 'hello there', response_format: 'wav' },
    checked: { model: model('demo/speech-small'), input: { valid: 'hello there', wrong: wrong.string } },
    limit: BODY_LIMIT,
    textField: 'hello there',
  },
  {
    name: 'POST /v1/audio/transcriptions',
    method: 'POST',
    path: '/v1/audio/transcriptions',
    valid: { model: 'demo/transcribe-small', input_audio: { data: WAV, format: 'wav' } },
    checked: { model: model('demo/transcribe-small'), input_audio: { valid: { data: WAV, format: 'wav' }, wrong: wrong.object } },
    limit: AUDIO_BODY_LIMIT,
    textField: 'demo/transcribe-small',
  },
  {
    name: 'POST /v1/queue/{model}',
    method: 'POST',
    path: '/v1/queue/demo/video-small',
    valid: queueBody,
    checked: queueFields,
    limit: BODY_LIMIT,
    textField: 'a lighthouse at dusk',
  },
  ...['/v1/videos', '/v1/videos/generations'].map(
    (path): BodyRoute => ({
      name: `POST ${path}`,
      method: 'POST',
      path,
      valid: { model: 'demo/video-small', ...queueBody },
      checked: { model: model('demo/video-small'), ...queueFields },
      limit: BODY_LIMIT,
      textField: 'a lighthouse at dusk',
    }),
  ),
  {
    name: 'POST /v1/mcp',
    method: 'POST',
    path: '/v1/mcp',
    valid: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hello there', version: '1.0.0' } },
    },
    checked: {
      jsonrpc: { valid: '2.0', wrong: wrong.jsonrpc },
      method: { valid: 'initialize', wrong: wrong.string },
      id: { valid: 1, wrong: wrong.rpcId },
    },
    limit: BODY_LIMIT,
    mcp: true,
    textField: 'hello there',
  },
];

/** The text without control characters (NUL to US, and DEL), which no header value may carry. */
export function withoutControls(s: string): string {
  return [...s].filter((c) => c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) !== 0x7f).join('');
}

/** Keys that have tripped JavaScript servers before, mixed into the fuzzed objects beside arbitrary ones. */
export const awkwardKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '', ' ', '\u0000', 'model\u0000'),
  fc.string({ maxLength: 12, unit: 'binary' }),
);

/**
 * A body of the route's field names in which at least one checked field has a wrong type (the others valid or
 * wrong too), beside arbitrary extra keys: whatever the rest, the route must refuse it.
 */
export function wrongTypes(route: BodyRoute): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(route.checked);
  return fc
    .tuple(
      fc.integer({ min: 0, max: names.length - 1 }),
      fc.tuple(...names.map((n) => fc.option(route.checked[n].wrong, { nil: undefined, freq: 2 }))),
      fc.tuple(...names.map((n) => route.checked[n].wrong)),
      fc.dictionary(awkwardKey, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    )
    .map(([forced, maybeWrong, wrongs, extra]) => {
      const body: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(extra)) Object.defineProperty(body, k, { value: v, enumerable: true, writable: true, configurable: true });
      for (const [k, v] of Object.entries(route.valid)) body[k] = v;
      names.forEach((n, i) => {
        body[n] = i === forced ? wrongs[i] : (maybeWrong[i] ?? route.checked[n].valid);
      });
      return body;
    });
}

/** JSON that is not an object at all (arrays, strings, numbers, null), or any value fast-check can make. */
export const wrongShape = fc.oneof(
  fc.jsonValue().filter((v) => v === null || typeof v !== 'object' || Array.isArray(v)),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }),
);

/** The JSON text of the route's valid body with `key` set to `valueText` (inserted as is: deep nesting, huge values). */
export function withRawField(route: BodyRoute, key: string, valueText: string): string {
  const { [key]: _dropped, ...rest } = route.valid;
  const base = JSON.stringify(rest);
  return `${base.slice(0, -1)}${base.length > 2 ? ',' : ''}${JSON.stringify(key)}:${valueText}}`;
}

/** Byte sequences that are not UTF-8: stray continuation bytes, overlong forms, surrogates, truncated sequences. */
export const invalidUtf8 = fc
  .array(
    fc.oneof(
      fc.integer({ min: 0x80, max: 0xbf }).map((b) => [b]),
      fc.integer({ min: 0xf5, max: 0xff }).map((b) => [b]),
      fc.constantFrom([0xc0, 0x80], [0xc1, 0xbf], [0xe0, 0x80, 0xaf], [0xf0, 0x80, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf]),
      fc.constantFrom([0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98]),
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((seqs) => Buffer.from(seqs.flat()))
  // A truncated sequence followed by a stray continuation byte can make a valid character: those are left out.
  .filter((b) => !isUtf8(b));
