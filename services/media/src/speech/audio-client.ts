import { once } from 'node:events';
import type { Response } from 'express';
import { clientGone } from '@gateway/service-kit';

/** The client's end of an audio stream, as much as the money flow needs of it: Express stays in the adapter below. */
export interface AudioClient {
  /** Aborts when the client hangs up. */
  readonly signal: AbortSignal;
  /** The answer begins: status 200 and these headers go out at once, before the first byte of audio. */
  open(head: { contentType: string; cost: string }): void;
  /** Resolves once the chunk is handed on, waiting while the client reads slower than the upstream speaks. */
  write(chunk: Uint8Array): Promise<void>;
  /** The audio is complete. */
  end(): void;
  /** The audio is not complete: the connection is cut, so no client can take a truncated file for a whole one. */
  cut(): void;
}

/** Runs `fn` with `res` as an AudioClient whose signal follows the response's close. */
export async function withAudioClient<T>(res: Response, fn: (client: AudioClient) => Promise<T>): Promise<T> {
  const client = clientGone(res);
  try {
    return await fn({
      signal: client.signal,
      open({ contentType, cost }) {
        res.status(200);
        res.setHeader('content-type', contentType);
        res.setHeader('x-gateway-cost', cost);
        res.flushHeaders();
      },
      async write(chunk) {
        client.signal.throwIfAborted();
        if (!res.write(chunk)) await once(res, 'drain', { signal: client.signal });
      },
      end: () => void res.end(),
      cut: () => void res.destroy(),
    });
  } finally {
    client.release();
  }
}
