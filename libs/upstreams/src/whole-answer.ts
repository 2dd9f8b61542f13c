import type { Dispatcher } from 'undici';

/** A non-streamed answer, read to its end. */
export interface WholeAnswer {
  statusCode: number;
  text: string;
}

/**
 * Dispatches one request and collects its answer in memory. undici's `request` wraps every answer in a Readable, an
 * AsyncResource and a parsed header object; a non-streamed call reads none of them, and the hot routes (chat,
 * embeddings, rerank) are mostly non-streamed. Errors are undici's own, so `classify` reads them as before.
 */
export function dispatchWhole(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, signal?: AbortSignal): Promise<WholeAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let statusCode = 0;
    const aborts = abortedBy(signal);
    dispatcher.dispatch(options, {
      onConnect: aborts.onConnect,
      onHeaders(status) {
        // 1xx answers (100 Continue, 103 Early Hints) come before the final one.
        if (status >= 200) statusCode = status;
        return true;
      },
      onData(chunk) {
        chunks.push(chunk);
        return true;
      },
      onComplete() {
        aborts.stop();
        resolve({ statusCode, text: utf8(chunks) });
      },
      onError(err) {
        aborts.stop();
        // An error answer cut short still said its status, which decides whether the client is at fault.
        if (statusCode >= 400) resolve({ statusCode, text: utf8(chunks) });
        else reject(err);
      },
    });
  });
}

/** Aborts a dispatched call when `signal` fires, until `stop` at the call's end. */
export function abortedBy(signal: AbortSignal | undefined): { onConnect(abort: (reason?: Error) => void): void; stop(): void } {
  let stop = () => {};
  return {
    onConnect(abort) {
      if (!signal) return;
      if (signal.aborted) return abort(signal.reason);
      const onAbort = () => abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      stop = () => signal.removeEventListener('abort', onAbort);
    },
    stop: () => stop(),
  };
}

/** As undici's `body.text()` decodes: UTF-8, a leading byte-order mark dropped. */
export function utf8(chunks: Buffer[]): string {
  const text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
