import { buildRegistry } from '@gateway/config';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { EdgeAnswer, EdgeCall, EdgeClient } from '../edge-client';
import { OneShotTransport } from '../one-shot-transport';
import { MCP_TEST_CONFIG } from '../testing/config';
import { buildServer } from '../server';
import type { SessionStore } from '../sessions';
import type { Notifier } from '../stream/notifier';
import { availableTools, type Caller, type ToolDeps } from './index';

const caller: Caller = { key: 'sk-test', accountId: 'acct_1', keyId: 'key_1', sessionId: 'mcp_1' };
const registry = buildRegistry(MCP_TEST_CONFIG);

/** A stand-in for the edge that records every call and answers `answer`. */
function fakeEdge(answer: Partial<EdgeAnswer> = {}) {
  const calls: { key: string; path: string; opts: EdgeCall }[] = [];
  const edge = {
    async call(key: string, path: string, opts: EdgeCall = {}): Promise<EdgeAnswer> {
      calls.push({ key, path, opts });
      return { status: 200, body: {}, requestId: 'req_gen', headers: new Headers(), ...answer };
    },
  };
  return { edge: edge as unknown as EdgeClient, calls };
}

/** One request through the SDK server the endpoint builds per request, as routes.ts sends it. */
async function exchange(deps: ToolDeps, method: string, params?: Record<string, unknown>) {
  const server = buildServer(caller, deps);
  const transport = new OneShotTransport();
  await server.connect(transport);
  try {
    const request = { jsonrpc: '2.0', id: 7, method, ...(params ? { params } : {}) } as JSONRPCRequest;
    return (await transport.exchange(request)) as { id: number; result?: Record<string, unknown>; error?: { code: number; message: string } };
  } finally {
    await server.close();
  }
}

type Answer = Awaited<ReturnType<typeof exchange>>;
const textOf = (a: Answer) => (a.result as { content: { text: string }[] }).content.map((c) => c.text).join(' ');

const depsWith = (edge: EdgeClient): ToolDeps => ({
  edge,
  registry,
  sessions: {} as SessionStore,
  notifier: {} as Notifier,
});

describe('mcp tools: arguments are checked before any gateway call', () => {
  it('lists every available tool with an object input schema that names its required arguments', async () => {
    const { edge } = fakeEdge();
    const answer = await exchange(depsWith(edge), 'tools/list');
    const tools = answer.result?.tools as { name: string; inputSchema: { type: string; required?: string[] }; outputSchema?: unknown }[];
    expect(tools.map((t) => t.name).sort()).toEqual(
      availableTools()
        .map((t) => t.name)
        .sort(),
    );
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema).toBeDefined();
    }
    expect(tools.find((t) => t.name === 'chat')?.inputSchema.required?.sort()).toEqual(['messages', 'model']);
  });

  it.each([
    ['get_model', { model: 'no-slash' }, /a model slug, <author>\/<slug> at model$/],
    ['get_model', {}, /expected string, received undefined at model$/],
    ['chat', { model: 'mcp/chat', messages: [] }, /at messages$/],
    ['chat', { model: 'mcp/chat', messages: [{ role: 'tool', content: 'x' }] }, /at messages\[0\]\.role$/],
    ['chat', { model: 'mcp/chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 0 }, /at max_tokens$/],
    ['chat', { model: 'mcp/chat', messages: [{ role: 'user', content: 'hi' }], temperature: 3 }, /at temperature$/],
    ['get_job', { job_id: 'not-a-job' }, /a job id, job_<id> at job_id$/],
  ])('%s refuses %j without calling the gateway', async (name, args, why) => {
    const { edge, calls } = fakeEdge();
    const answer = await exchange(depsWith(edge), 'tools/call', { name, arguments: args });
    // A tool error the model can read and correct (MCP's rule for argument faults), naming the field; not a JSON-RPC error.
    expect(answer.error).toBeUndefined();
    expect(answer.result?.isError).toBe(true);
    expect(textOf(answer)).toMatch(/^MCP error -32602: Input validation error: Invalid arguments for tool /);
    expect(textOf(answer)).toMatch(why);
    expect(calls).toEqual([]);
  });

  it('refuses a tool it does not offer', async () => {
    const { edge, calls } = fakeEdge();
    const answer = await exchange(depsWith(edge), 'tools/call', { name: 'drop_tables', arguments: {} });
    expect(answer.result?.isError).toBe(true);
    expect(textOf(answer)).toBe('MCP error -32602: Tool drop_tables not found');
    expect(calls).toEqual([]);
  });

  it('calls the gateway with the caller’s key and the checked arguments, and answers the structured result', async () => {
    const { edge, calls } = fakeEdge({
      body: {
        id: 'chatcmpl_1',
        model: 'mcp/chat',
        choices: [{ message: { content: 'hello' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      },
    });
    const answer = await exchange(depsWith(edge), 'tools/call', {
      name: 'chat',
      arguments: { model: 'mcp/chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
    });
    expect(calls).toEqual([
      {
        key: 'sk-test',
        path: '/v1/chat/completions',
        opts: expect.objectContaining({
          method: 'POST',
          body: { model: 'mcp/chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, stream: false },
        }),
      },
    ]);
    expect(answer.result?.structuredContent).toEqual({
      id: 'chatcmpl_1',
      model: 'mcp/chat',
      content: 'hello',
      finish_reason: 'stop',
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      generation_id: 'req_gen',
    });
  });

  it('answers a route’s refusal as a tool error carrying the gateway’s envelope, not as a JSON-RPC error', async () => {
    const { edge } = fakeEdge({
      status: 402,
      body: { error: { code: 'insufficient_credits', message: 'Insufficient credits', request_id: 'req_9' } },
    });
    const answer = await exchange(depsWith(edge), 'tools/call', { name: 'get_model', arguments: { model: 'mcp/chat' } });
    expect(answer.error).toBeUndefined();
    expect(answer.result?.isError).toBe(true);
    expect(JSON.parse(textOf(answer))).toEqual({
      error: { status: 402, code: 'insufficient_credits', message: 'Insufficient credits', request_id: 'req_9' },
    });
  });
});
