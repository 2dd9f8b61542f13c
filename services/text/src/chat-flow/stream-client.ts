import type { Response } from 'express';
import { clientGone } from '@gateway/service-kit';
import { openSse } from './sse';

/** The client's end of a stream, as much as the money flow needs of it: Express stays in the adapter below. */
export interface StreamClient {
  /** Aborts when the client hangs up. */
  readonly signal: AbortSignal;
  /** The answer has begun: status and headers go out. */
  open(): void;
  /** Whether frames can still reach the client. */
  writable(): boolean;
  end(): void;
}

/** Runs `fn` with `res` as a server-sent event StreamClient whose signal follows the response's close. */
export async function withSseClient<T>(res: Response, fn: (client: StreamClient) => Promise<T>): Promise<T> {
  const client = clientGone(res);
  try {
    return await fn({
      signal: client.signal,
      open: () => openSse(res),
      writable: () => !res.writableEnded && !res.destroyed,
      end: () => void res.end(),
    });
  } finally {
    client.release();
  }
}
