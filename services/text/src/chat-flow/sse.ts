import type { Response } from 'express';

/** Opens a server-sent event stream; headers go out at once so proxies start relaying. */
export function openSse(res: Response): void {
  res.status(200);
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('x-accel-buffering', 'no');
  res.flushHeaders();
}

/** `data: <json>` frame (chat and completions style). */
export function sendData(res: Response, payload: unknown): void {
  if (!res.writableEnded) res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
}

/** `event: <name>` + `data: <json>` frame (messages and responses style). */
export function sendEvent(res: Response, event: string, payload: unknown): void {
  if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`);
}
