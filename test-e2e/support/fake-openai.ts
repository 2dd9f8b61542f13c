import type http from 'node:http';
import { fakeSpeech, fakeTranscription } from './fake-openai-audio';
import { fakeImageFile, fakeImages } from './fake-openai-images';
import { startFakeServer, type FakeUpstream } from './fake-server';
import { malformedCountOf } from './malformed-usage';

/**
 * A local OpenAI-compatible upstream whose behaviour is chosen by the upstream model name, so one config can
 * point endpoints at healthy, failing, slow and breaking "providers":
 *   ok            answers "pong", usage 3 prompt / 1 completion (streams "po", "ng")
 *   words-<n>     answers n words ("w1 w2 ..."), usage = prompt 5, completion n; honours the request's output limit
 *                 as OpenAI does, max_completion_tokens over max_tokens (a word is a token here): stops there,
 *                 finish_reason length
 *   status-<code> answers that HTTP status with an OpenAI-style error body
 *   slow-<ms>     waits that long before the response head
 *   break-<n>     streams n content chunks, then destroys the socket (no [DONE]); non-streamed: destroys at once
 *                 (break-0: only the opening role chunk, no content, then the cut)
 *   hello-<n>     like words-<n>, but every word is "hello": one o200k token each, so the gateway's own count of
 *                 what it delivers equals the upstream's (a test of a stream cut by the gateway can be worked by hand)
 *   deaf-<n>      like hello-<n>, but ignores the request's output limit, as a misbehaving upstream would: always n
 *                 words, finish_reason stop
 *   trickle-<n>-<ms>  streams n words like words-<n>, the first at once and each next one <ms> later (a client
 *                 can leave mid-answer and the gateway has seen exactly the words before it left); stops when
 *                 the gateway hangs up
 *   reason-<n>    thinks first: n reasoning words as reasoning_content ("thought1 thought2 ..."), then the answer
 *                 " done"; streamed, it then stays silent, no finish and no usage, until the gateway hangs up (a
 *                 client that leaves after the last content chunk); usage = prompt 5, completion n + 1
 *   overreport    reports far more completion tokens than max_tokens allows
 *   bad-usage-<kind>  answers as ok, with every usage figure malformed as support/malformed-usage.ts names it
 *                 (fraction, string, negative, huge)
 *   bad-content   answers a message whose content is a number (an answer in the wrong shape)
 *   tool-call     answers with one tool call to the first tool of the request (arguments {"city":"Paris"}),
 *                 finish_reason tool_calls; streamed as OpenAI does (id and name first, arguments in two pieces)
 *   echo          answers with the JSON of the messages it received (to check translations)
 *   cached        answers as ok, usage 3000 prompt of which 2000 cached, 300 completion of which 250 reasoning
 *                 (prompt_tokens_details / completion_tokens_details as OpenAI sends them, audio_tokens included)
 * POST /v1/embeddings answers one deterministic vector per input (length `dimensions` or 8), usage.prompt_tokens =
 * number of inputs × 2; model status-<code> fails as above, bad-usage-<kind> reports that malformed figure.
 * POST /v1/images/generations and the image files it links to: see fake-openai-images.ts.
 * POST /v1/audio/speech and /v1/audio/transcriptions (multipart): see fake-openai-audio.ts.
 */
export type { FakeUpstream } from './fake-server';

export function startFakeOpenAI(): Promise<FakeUpstream> {
  return startFakeServer(async (req, res, { model, body }) => {
    if (req.url === '/v1/embeddings') return void embeddings(res, body, model);
    if (req.url === '/v1/images/generations') return void fakeImages(req, res, body, model);
    if (req.url === '/v1/audio/speech') return void fakeSpeech(req, res, body, model);
    if (req.url === '/v1/audio/transcriptions') return void fakeTranscription(res, body, model);
    if (fakeImageFile(req, res)) return;
    if (req.url !== '/v1/chat/completions') return void res.writeHead(404).end();

    const status = /^status-(\d+)$/.exec(model);
    if (status) {
      res.writeHead(Number(status[1]), { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: { message: `fake upstream says ${status[1]}`, type: 'fake' } }));
    }
    const slow = /^slow-(\d+)$/.exec(model);
    if (slow) await new Promise((r) => setTimeout(r, Number(slow[1])));
    const brk = /^break-(\d+)$/.exec(model);
    const trickle = /^trickle-(\d+)-(\d+)$/.exec(model);
    const hello = /^(hello|deaf)-(\d+)$/.exec(model);
    const deaf = hello?.[1] === 'deaf';
    const words = /^words-(\d+)$/.exec(model) ?? trickle ?? (hello && [hello[0], hello[2]]);
    const limit = deaf ? Number.POSITIVE_INFINITY : (body.max_completion_tokens ?? body.max_tokens ?? Number.POSITIVE_INFINITY);
    const wordCount = words ? Math.min(Number(words[1]), limit) : 0;
    const finish = words && wordCount < Number(words[1]) ? 'length' : 'stop';
    const pieces = brk
      ? Array.from({ length: Number(brk[1]) }, (_, i) => `part${i} `)
      : words
        ? Array.from({ length: wordCount }, (_, i) => `${i ? ' ' : ''}${hello ? 'hello' : `w${i + 1}`}`)
        : ['po', 'ng'];
    const bad = malformedCountOf(model);
    const usage =
      model === 'overreport'
        ? { prompt_tokens: 3, completion_tokens: 1_000_000, total_tokens: 1_000_003 }
        : bad !== undefined
          ? { prompt_tokens: bad, completion_tokens: bad, total_tokens: bad }
          : model === 'cached'
            ? {
                prompt_tokens: 3000,
                completion_tokens: 300,
                total_tokens: 3300,
                prompt_tokens_details: { cached_tokens: 2000, audio_tokens: 0 },
                completion_tokens_details: { reasoning_tokens: 250, audio_tokens: 0 },
              }
            : {
                prompt_tokens: words ? 5 : 3,
                completion_tokens: words ? wordCount : 1,
                total_tokens: (words ? 5 : 3) + (words ? wordCount : 1),
              };
    const base = { id: 'chatcmpl-fake', created: Math.floor(Date.now() / 1000), model, system_fingerprint: 'fp_fake' };
    if (model === 'tool-call') return void toolCall(res, body, base);
    const reason = /^reason-(\d+)$/.exec(model);
    if (reason) return void reasoning(res, body, base, Number(reason[1]));
    if (model === 'echo') pieces.splice(0, pieces.length, JSON.stringify(body.messages));

    if (!body.stream) {
      if (brk) return void req.socket.destroy();
      res.writeHead(200, { 'content-type': 'application/json' });
      const content = model === 'bad-content' ? 42 : pieces.join('');
      return void res.end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finish }],
          usage,
        }),
      );
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const frame = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    frame({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    for (const [i, p] of pieces.entries()) {
      if (trickle && i > 0) await new Promise((r) => setTimeout(r, Number(trickle[2])));
      if (req.socket.destroyed) return;
      frame({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: p }, finish_reason: null }] });
      await new Promise((r) => setImmediate(r));
    }
    if (brk) return void setTimeout(() => req.socket.destroy(), 20);
    frame({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: finish }] });
    if (body.stream_options?.include_usage) frame({ ...base, object: 'chat.completion.chunk', choices: [], usage });
    res.end('data: [DONE]\n\n');
  });
}

function toolCall(res: http.ServerResponse, body: Record<string, any>, base: Record<string, unknown>) {
  const name = body.tools?.[0]?.function?.name ?? 'unknown';
  const usage = { prompt_tokens: 10, completion_tokens: 7, total_tokens: 17 };
  const call = { id: 'call_fake1', type: 'function', function: { name, arguments: '{"city":"Paris"}' } };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end(
      JSON.stringify({
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }],
        usage,
      }),
    );
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const frame = (delta: unknown, finish: string | null = null) =>
    res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
  frame({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name, arguments: '' } }] });
  frame({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] });
  frame({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] });
  frame({}, 'tool_calls');
  if (body.stream_options?.include_usage) res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

async function reasoning(res: http.ServerResponse, body: Record<string, any>, base: Record<string, unknown>, n: number) {
  const thoughts = Array.from({ length: n }, (_, i) => `${i ? ' ' : ''}thought${i + 1}`);
  const answer = ' done';
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    const message = { role: 'assistant', reasoning_content: thoughts.join(''), content: answer };
    const usage = { prompt_tokens: 5, completion_tokens: n + 1, total_tokens: n + 6 };
    return void res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: 'stop' }], usage }));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const frame = (delta: unknown) =>
    res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
  frame({ role: 'assistant', content: '' });
  for (const t of thoughts) frame({ reasoning_content: t });
  frame({ content: answer });
  // The finish and the usage would come next; this upstream waits for the gateway to hang up instead.
  await new Promise((r) => res.once('close', r));
}

function embeddings(res: http.ServerResponse, body: Record<string, any>, model: string) {
  const status = /^status-(\d+)$/.exec(model);
  if (status) {
    res.writeHead(Number(status[1]), { 'content-type': 'application/json' });
    return void res.end(JSON.stringify({ error: { message: `fake upstream says ${status[1]}` } }));
  }
  const inputs: unknown[] = Array.isArray(body.input) ? body.input : [body.input];
  const dims = typeof body.dimensions === 'number' ? body.dimensions : 8;
  const data = inputs.map((input, index) => ({
    object: 'embedding',
    index,
    // Deterministic, distinct per input and exactly representable in float32.
    embedding: Array.from({ length: dims }, (_, d) => ((JSON.stringify(input).length + d * 7 + index) % 16) / 16),
  }));
  res.writeHead(200, { 'content-type': 'application/json' });
  const tokens = malformedCountOf(model) ?? inputs.length * 2;
  res.end(JSON.stringify({ object: 'list', model, data, usage: { prompt_tokens: tokens, total_tokens: tokens } }));
}
