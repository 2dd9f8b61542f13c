// A zero-latency upstream for the benchmark, speaking each protocol the gateway calls: OpenAI chat and embeddings,
// Anthropic messages and Cohere rerank. Every answer is precomputed; nothing waits.
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

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const a = answers[req.url] ?? answers['/v1/chat/completions'];
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': a.len });
    res.end(a.s);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
