import type { Response } from 'express';

/**
 * Opens a server-sent event stream; headers go out at once so proxies start relaying. The socket is corked until
 * the end of the turn so that they leave in one write with the frames of the same turn (the stream opens when the
 * first upstream chunk is in hand): flushHeaders alone is a write, and a syscall, of its own. Node corks each
 * `res.write` the same way, so the frames of one turn already share a write.
 */
export function openSse(res: Response): void {
  res.cork();
  process.nextTick(uncorkUnlessEnded, res);
  res.status(200);
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('x-accel-buffering', 'no');
  res.flushHeaders();
}

function uncorkUnlessEnded(res: Response): void {
  // end() has flushed everything, and its socket may already carry the connection's next response: not ours.
  if (!res.writableEnded) res.uncork();
}

/** `data: <json>` frame (chat and completions style). */
export function sendData(res: Response, payload: unknown): void {
  if (!res.writableEnded) res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
}

/** `event: <name>` + `data: <json>` frame (messages and responses style). */
export function sendEvent(res: Response, event: string, payload: unknown): void {
  if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`);
}
