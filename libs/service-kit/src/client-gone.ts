import type { ServerResponse } from 'node:http';

/**
 * An AbortSignal that fires when the client closes the connection before the response has been sent in full: the
 * upstream call it is passed to stops, and the money flow knows the client left. `release` detaches it.
 */
export function clientGone(res: ServerResponse): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const gone = () => {
    if (!res.writableFinished) controller.abort(new Error('the client closed the connection'));
  };
  res.on('close', gone);
  return { signal: controller.signal, release: () => res.off('close', gone) };
}
