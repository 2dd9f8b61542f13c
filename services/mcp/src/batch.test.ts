import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { MeterResult } from '@gateway/ratelimit';
import { answerBatch } from './batch';
import { messagesOf } from './body';

const req = (id: number): JSONRPCRequest => ({ jsonrpc: '2.0', id, method: 'tools/list' });
const meter = (allowed: boolean): MeterResult => ({ allowed, limit: 10, remaining: allowed ? 1 : 0, resetAt: 2e9, retryAfter: 42 });

describe('messagesOf', () => {
  it('refuses a batch longer than the cap whole, before validating a message of it', () => {
    const body = Buffer.from(JSON.stringify(Array.from({ length: 1_000 }, (_, i) => req(i))));
    expect(() => messagesOf(body, 100)).toThrow(/A batch of 1000 messages: at most 100 per POST/);
    // Not even the first message is looked at: one that is not JSON-RPC at all is refused for the size.
    expect(() => messagesOf(Buffer.from(JSON.stringify(Array.from({ length: 101 }, () => ({ hello: 1 })))), 100)).toThrow(/at most 100/);
    expect(messagesOf(Buffer.from(JSON.stringify(Array.from({ length: 100 }, (_, i) => req(i)))), 100).messages).toHaveLength(100);
  });
});

describe('answerBatch', () => {
  const bounds = { concurrency: 4, maxAnswerBytes: 1_000 };

  it('answers in order, refusing the requests the meter refused without running them', async () => {
    const ran: number[] = [];
    const answers = await answerBatch(
      [{ request: req(1) }, { request: req(2), meter: meter(true) }, { request: req(3), meter: meter(false) }],
      async (r) => {
        ran.push(r.id as number);
        return { jsonrpc: '2.0', id: r.id, result: {} };
      },
      bounds,
    );
    expect(ran.sort()).toEqual([1, 2]);
    expect(answers.map((a) => JSON.parse(a))).toEqual([
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 2, result: {} },
      {
        jsonrpc: '2.0',
        id: 3,
        error: { code: -32000, message: expect.stringContaining('retry in 42 s'), data: { code: 'rate_limited', retry_after: 42 } },
      },
    ]);
  });

  it('keeps the answers within the byte bound: what does not fit is an error, and once full nothing more runs', async () => {
    let running = 0;
    let most = 0;
    let ran = 0;
    const answers = await answerBatch(
      Array.from({ length: 20 }, (_, i) => ({ request: req(i) })),
      async (r) => {
        ran++;
        most = Math.max(most, ++running);
        await new Promise((resolve) => setImmediate(resolve));
        running--;
        return { jsonrpc: '2.0', id: r.id, result: { pad: 'x'.repeat(300) } };
      },
      bounds,
    );
    const parsed = answers.map((a) => JSON.parse(a));
    const kept = parsed.filter((a) => a.result);
    expect(kept.length).toBe(2); // about 340 bytes each: a third would pass 1,000
    expect(answers.filter((_, i) => parsed[i].result).join('').length).toBeLessThanOrEqual(1_000);
    expect(parsed.filter((a) => a.error?.data?.code === 'response_too_large')).toHaveLength(18);
    expect(parsed.map((a) => a.id)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(most).toBeLessThanOrEqual(4);
    expect(ran).toBeLessThan(20);
  });

  it('never cuts a lone request, whatever its size', async () => {
    const [answer] = await answerBatch(
      [{ request: req(1) }],
      async (r) => ({ jsonrpc: '2.0', id: r.id, result: { pad: 'x'.repeat(5_000) } }),
      bounds,
    );
    expect(JSON.parse(answer).result.pad).toHaveLength(5_000);
  });
});
