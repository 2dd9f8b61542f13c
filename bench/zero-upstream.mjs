// A zero-latency upstream for the benchmark, speaking each protocol the gateway calls: OpenAI chat, embeddings and
// image generation (answering a URL it serves itself), Anthropic messages and Cohere rerank. Every answer is precomputed; nothing waits.
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

// A 64 KiB "image" the gateway streams back from /v1/files; its URL is filled in once the port is known.
const IMAGE = Buffer.alloc(64 * 1024, 7);
let imageAnswer;

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url === '/files/bench.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': IMAGE.length });
      return res.end(IMAGE);
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
