import type http from 'node:http';

/**
 * The response class of a listener that drains: once `draining()` says so, every answer written from then on closes
 * its connection (`Connection: close`), whenever its request arrived and whatever Connection header the app set. The
 * edge's proxy copies the service's `Connection: keep-alive` onto its answer, and Node keeps a connection open on
 * an explicit keep-alive header whatever `shouldKeepAlive` says: such an answer left the connection idle in the
 * caller's pool, to be closed under its next request when the notice ended (serve.ts, DRAIN_NOTICE_MS). Found by
 * the rolling restart of test-e2e/reliability/replica-faults.e2e.ts (status 0 while an edge drained).
 */
export function closingWhenDraining(Base: typeof http.ServerResponse, draining: () => boolean): typeof http.ServerResponse {
  return class DrainingResponse extends Base {
    override writeHead(...args: unknown[]): this {
      if (draining() && !this.headersSent) {
        this.shouldKeepAlive = false;
        this.setHeader('connection', 'close');
        // Headers given to writeHead itself are set after ours: their Connection would win.
        const last = args.length - 1;
        const given = args[last];
        if (last > 0 && given && typeof given === 'object' && !Array.isArray(given)) {
          args[last] = Object.fromEntries(Object.entries(given).filter(([name]) => name.toLowerCase() !== 'connection'));
        }
      }
      return (super.writeHead as (...a: unknown[]) => this).apply(this, args);
    }
  } as typeof http.ServerResponse;
}
