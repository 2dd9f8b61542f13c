import type { ServerResponse } from 'node:http';

/**
 * Calls `gone` once when the client's connection closes before the response has been sent in full; returns what
 * detaches it. The socket is watched besides the response: Node never emits `close` for a pipelined response queued
 * behind one whose socket died, so a response's own event alone can leave a stream, a lock or a slot held for good.
 */
export function onClientGone(res: ServerResponse, gone: () => void): () => void {
  const socket = res.req.socket;
  let told = false;
  const tell = () => {
    if (told || res.writableFinished) return;
    told = true;
    gone();
  };
  res.on('close', tell);
  socket.on('close', tell);
  // A socket that died before this request was handled emits nothing more.
  if (socket.destroyed) queueMicrotask(tell);
  return () => {
    res.off('close', tell);
    socket.off('close', tell);
  };
}

/**
 * An AbortSignal that fires when the client closes the connection before the response has been sent in full: the
 * upstream call it is passed to stops, and the money flow knows the client left. `release` detaches it.
 */
export function clientGone(res: ServerResponse): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const release = onClientGone(res, () => controller.abort(new Error('the client closed the connection')));
  return { signal: controller.signal, release };
}
