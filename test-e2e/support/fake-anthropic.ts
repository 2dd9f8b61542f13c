import type http from 'node:http';
import { startFakeServer, type FakeUpstream } from './fake-server';
import { malformedCountOf } from './malformed-usage';

/**
 * A local message-API upstream (POST /v1/messages, JSON or SSE events) whose behaviour is chosen by the upstream
 * model name, like fake-openai.ts. It refuses calls without the expected `x-api-key` and `anthropic-version`.
 *   ok            answers "pong", usage 3 input / 1 output (streams "po", "ng")
 *   tool-use      answers "Let me check." and one tool_use of the request's first tool ({"city":"Paris"}),
 *                 stop_reason tool_use (streamed as input_json_delta in two pieces); when the last user turn holds
 *                 tool_result blocks, answers "The tool said: <first result>" instead
 *   stop          answers "a", stop_reason stop_sequence with the request's first stop sequence
 *   echo          answers the JSON of the request body it received (to check translations)
 *   cached        answers "pong", usage 1000 input, 500 written to the cache, 2000 read from it, 300 output (the
 *                 cache figures in message_start when streamed, as the message API sends them)
 *   status-<code> answers that HTTP status with a message-API error body
 *   break-<n>     streams n text deltas, then destroys the socket (no message_stop); non-streamed: destroys at once
 *   error-<n>     streams n text deltas, then an `error` event (overloaded_error) and ends
 *   bad-usage-<kind>  answers as ok, with every usage figure malformed as support/malformed-usage.ts names it
 *   bad-content   answers a text block without text (an answer in the wrong shape)
 */
export const FAKE_ANTHROPIC_KEY = 'fake-anthropic-key';

type Body = Record<string, any>;

function answerOf(body: Body): {
  content: any[];
  stop_reason: string;
  stop_sequence: string | null;
  usage: { input_tokens: unknown; output_tokens: unknown; cache_creation_input_tokens?: number; cache_read_input_tokens?: number };
} {
  const model: string = body.model;
  const bad = malformedCountOf(model);
  if (bad !== undefined)
    return {
      content: [{ type: 'text', text: 'pong' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: bad, output_tokens: bad },
    };
  if (model === 'bad-content')
    return { content: [{ type: 'text', text: 7 }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } };
  const last = body.messages?.[body.messages.length - 1];
  const results = Array.isArray(last?.content) ? last.content.filter((b: any) => b.type === 'tool_result') : [];
  if (model === 'tool-use' && results.length) {
    const said = typeof results[0].content === 'string' ? results[0].content : JSON.stringify(results[0].content);
    return {
      content: [{ type: 'text', text: `The tool said: ${said}` }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 6 },
    };
  }
  if (model === 'tool-use') {
    return {
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'toolu_fake1', name: body.tools?.[0]?.name ?? 'unknown', input: { city: 'Paris' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 7 },
    };
  }
  if (model === 'stop')
    return {
      content: [{ type: 'text', text: 'a' }],
      stop_reason: 'stop_sequence',
      stop_sequence: body.stop_sequences?.[0] ?? null,
      usage: { input_tokens: 3, output_tokens: 1 },
    };
  if (model === 'cached')
    return {
      content: [{ type: 'text', text: 'pong' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 1000, cache_creation_input_tokens: 500, cache_read_input_tokens: 2000, output_tokens: 300 },
    };
  if (model === 'echo')
    return {
      content: [{ type: 'text', text: JSON.stringify(body) }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 1 },
    };
  return { content: [{ type: 'text', text: 'pong' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } };
}

const tick = () => new Promise((r) => setImmediate(r));

async function stream(req: http.IncomingMessage, res: http.ServerResponse, body: Body) {
  const model: string = body.model;
  const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const answer = answerOf(body);
  send('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_fake',
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: answer.usage.input_tokens,
        ...(answer.usage.cache_read_input_tokens === undefined
          ? {}
          : { cache_creation_input_tokens: answer.usage.cache_creation_input_tokens, cache_read_input_tokens: answer.usage.cache_read_input_tokens }),
        output_tokens: 1,
      },
    },
  });
  const failing = /^(break|error)-(\d+)$/.exec(model);
  if (failing) {
    send('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    for (let i = 0; i < Number(failing[2]); i++) {
      send('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `part${i} ` } });
      await tick();
    }
    if (failing[1] === 'break') return void setTimeout(() => req.socket.destroy(), 20);
    send('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    return void res.end();
  }
  for (const [index, block] of answer.content.entries()) {
    if (block.type === 'text') {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      if (index === 0) send('ping', { type: 'ping' });
      const pieces = block.text === 'pong' ? ['po', 'ng'] : [block.text];
      for (const text of pieces) {
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
        await tick();
      }
    } else {
      send('content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } });
      const json = JSON.stringify(block.input);
      const cut = Math.floor(json.length / 2);
      for (const partial_json of [json.slice(0, cut), json.slice(cut)]) {
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
        await tick();
      }
    }
    send('content_block_stop', { type: 'content_block_stop', index });
  }
  send('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: answer.stop_reason, stop_sequence: answer.stop_sequence },
    usage: { output_tokens: answer.usage.output_tokens },
  });
  send('message_stop', { type: 'message_stop' });
  res.end();
}

export function startFakeAnthropic(): Promise<FakeUpstream> {
  return startFakeServer(async (req, res, { model, body }) => {
    const error = (status: number, type: string, message: string) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type, message } }));
    };
    if (req.url !== '/v1/messages' || req.method !== 'POST') return void error(404, 'not_found_error', 'Not found');
    if (req.headers['x-api-key'] !== FAKE_ANTHROPIC_KEY) return void error(401, 'authentication_error', 'invalid x-api-key');
    if (req.headers['anthropic-version'] !== '2023-06-01') return void error(400, 'invalid_request_error', 'anthropic-version header is required');
    if (typeof body.max_tokens !== 'number') return void error(400, 'invalid_request_error', 'max_tokens: Field required');

    const status = /^status-(\d+)$/.exec(model);
    if (status) return void error(Number(status[1]), Number(status[1]) === 529 ? 'overloaded_error' : 'api_error', `fake upstream says ${status[1]}`);
    if (body.stream) return void stream(req, res, body);
    if (/^(break|error)-\d+$/.test(model)) return void req.socket.destroy();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'msg_fake', type: 'message', role: 'assistant', model, ...answerOf(body) }));
  });
}
