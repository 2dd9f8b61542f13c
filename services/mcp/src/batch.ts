import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { MeterResult } from '@gateway/ratelimit';
import { RPC, rpcError } from './json-rpc';

/** A request of the batch and whether the meter let it through (undefined: the edge's count, always through). */
export interface BatchItem {
  request: JSONRPCRequest;
  meter?: MeterResult;
}

export interface BatchBounds {
  /** Calls running at once. */
  concurrency: number;
  /** Bytes of all answers together; a lone request (no batch) is never cut. */
  maxAnswerBytes: number;
}

/**
 * The answers to a batch's requests, in their order, each serialized once. Calls run a few at a time and yield to
 * the event loop between them, so one batch cannot hold the process; a refused call (over the rate limit) is
 * answered without running. The answers kept stay within `maxAnswerBytes`: one that does not fit is replaced by an
 * error asking for it alone, and so is every call not started by then, without running.
 */
export async function answerBatch(items: BatchItem[], run: (r: JSONRPCRequest) => Promise<object>, bounds: BatchBounds): Promise<string[]> {
  const answers: string[] = new Array(items.length);
  let bytes = 0;
  let full = false;
  let next = 0;
  const tooLarge = (r: JSONRPCRequest) =>
    JSON.stringify(
      rpcError(r.id, RPC.server, `This batch's answers passed ${bounds.maxAnswerBytes} bytes: send this request alone, or in a smaller batch`, {
        code: 'response_too_large',
      }),
    );
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      const { request, meter } = items[i];
      if (meter && !meter.allowed) {
        answers[i] = JSON.stringify(
          rpcError(request.id, RPC.server, `Rate limit of ${meter.limit} requests exceeded; retry in ${meter.retryAfter} s`, {
            code: 'rate_limited',
            retry_after: meter.retryAfter,
          }),
        );
        continue;
      }
      if (items.length > 1 && full) {
        answers[i] = tooLarge(request);
        continue;
      }
      await yieldToLoop();
      const text = JSON.stringify(await run(request));
      const size = Buffer.byteLength(text);
      if (items.length > 1 && bytes + size > bounds.maxAnswerBytes) {
        answers[i] = tooLarge(request);
        full = true;
      } else {
        answers[i] = text;
        bytes += size;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(bounds.concurrency, items.length) }, worker));
  return answers;
}
