import net from 'node:net';

export interface HoldPortOptions {
  /** How long a port that nobody listens on may stay taken before giving up; a little over Linux's 60 s TIME_WAIT. */
  waitMs?: number;
  retryMs?: number;
  /** Told once, when the port turns out to be held by connections rather than by a listener. */
  onWait?: () => void;
}

/**
 * Listens on `port` to keep it for a process that starts later, refusing every connection meanwhile
 * (deploy/local-fleet.ts holds the fleet's fixed layout this way). Another listener on the port fails at once with
 * EADDRINUSE. But a port nobody listens on can be taken too: a connection that ended in the last minute leaves its
 * local end in TIME_WAIT (a test suite run just before leaves thousands), and an outbound connection holds its local
 * end while it lasts. Both go by themselves, so such a port is tried again until `waitMs` has passed.
 */
export async function holdPort(port: number, host: string, opts: HoldPortOptions = {}): Promise<net.Server> {
  const waitMs = opts.waitMs ?? 65_000;
  const retryMs = opts.retryMs ?? 250;
  const started = Date.now();
  let told = false;
  for (;;) {
    try {
      return await listenOn(port, host);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
      if ((await someoneListens(port, host)) || Date.now() - started >= waitMs) throw e;
      if (!told) opts.onWait?.();
      told = true;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}

function listenOn(port: number, host: string): Promise<net.Server> {
  // A connection meanwhile (a readiness poll) is refused at once: one left open would hold up the release.
  const server = net.createServer((socket) => socket.destroy());
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      server.unref();
      resolve(server);
    });
  });
}

function someoneListens(port: number, host: string): Promise<boolean> {
  const to = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return new Promise((resolve) => {
    const probe = net.connect({ port, host: to });
    probe.setTimeout(1_000);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('timeout', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}
