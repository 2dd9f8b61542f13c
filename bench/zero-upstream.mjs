// A zero-latency upstream for the benchmark, speaking each protocol the gateway calls: OpenAI chat (streamed as
// server-sent events when the body asks `"stream": true`), embeddings and image generation (answering a URL it serves
// itself), Anthropic messages and Cohere rerank. Every answer is precomputed; nothing waits.
import http from 'node:http';

const json = (o) => {
  const s = JSON.stringify(o);
  return { s, len: Buffer.byteLength(s) };
};
const answers = {
  '/v1/chat/completions': json({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 0,
    model: 'bench',
    choices: [{ index: 0, message: { role: 'assistant', content: 'pong' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  }),
  '/v1/embeddings': json({
    object: 'list',
    model: 'bench',
    data: [{ object: 'embedding', index: 0, embedding: Array.from({ length: 16 }, (_, i) => i / 16) }],
    usage: { prompt_tokens: 2, total_tokens: 2 },
  }),
  '/v1/messages': json({
    id: 'msg_bench',
    type: 'message',
    role: 'assistant',
    model: 'bench',
    content: [{ type: 'text', text: 'pong' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 3, output_tokens: 1 },
  }),
  '/v1/rerank': json({
    id: 'rr-bench',
    results: [
      { index: 1, relevance_score: 0.9 },
      { index: 0, relevance_score: 0.1 },
    ],
    meta: { billed_units: { search_units: 1 } },
  }),
};

// A streamed chat answer: a role chunk, three content chunks, the finish chunk, the usage chunk (the gateway asks for
// `stream_options.include_usage`), then [DONE]; each frame its own write, all at once.
const chunk = (delta, finish = null) => ({
  id: 'chatcmpl-bench',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'bench',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const SSE_FRAMES = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'po' }),
  chunk({ content: 'n' }),
  chunk({ content: 'g' }),
  chunk({}, 'stop'),
  {
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'bench',
    choices: [],
    usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 },
  },
]
  .map((o) => `data: ${JSON.stringify(o)}\n\n`)
  .concat('data: [DONE]\n\n');
const STREAM_ASKED = /"stream"\s*:\s*true/;

// A 64 KiB "image" the gateway streams back from /v1/files; its URL is filled in once the port is known.
const IMAGE = Buffer.alloc(64 * 1024, 7);
let imageAnswer;

// `pnpm soak` with faults: ZERO_FAIL_RATE of the non-streamed answers are a 500, ZERO_BREAK_RATE of the streams
// are cut after their first content frame (the socket destroyed, no [DONE]), chosen at random.
const FAIL_RATE = Number(process.env.ZERO_FAIL_RATE ?? 0);
const BREAK_RATE = Number(process.env.ZERO_BREAK_RATE ?? 0);

const server = http.createServer((req, res) => {
  // Only a chat body is read (for its stream flag); every other body is drained unread.
  const chat = req.url === '/v1/chat/completions';
  let body = '';
  if (chat) {
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
  } else req.resume();
  req.on('end', () => {
    if (chat && STREAM_ASKED.test(body)) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      if (BREAK_RATE > 0 && Math.random() < BREAK_RATE) {
        res.write(SSE_FRAMES[0]);
        res.write(SSE_FRAMES[1]);
        return void setImmediate(() => res.destroy());
      }
      for (let i = 0; i < SSE_FRAMES.length - 1; i++) res.write(SSE_FRAMES[i]);
      return res.end(SSE_FRAMES[SSE_FRAMES.length - 1]);
    }
    if (req.url === '/files/bench.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': IMAGE.length });
      return res.end(IMAGE);
    }
    if (FAIL_RATE > 0 && req.method === 'POST' && Math.random() < FAIL_RATE) {
      res.writeHead(500, { 'content-type': 'application/json' });
      return res.end('{"error":{"message":"injected failure","type":"server_error"}}');
    }
    const a = req.url === '/v1/images/generations' ? imageAnswer : (answers[req.url] ?? answers['/v1/chat/completions']);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': a.len });
    res.end(a.s);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  imageAnswer = json({ created: 0, data: [{ url: `http://127.0.0.1:${server.address().port}/files/bench.png` }] });
  process.stdout.write(`${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
