import http from 'node:http';
import type { Express } from 'express';
import type { Logger } from './logger';

export interface Served {
  server: http.Server;
  port: number;
  /** Stops accepting, lets in-flight requests (streams included) finish up to `graceMs`, then runs `onDrained`. */
  shutdown(graceMs?: number): Promise<void>;
}

export async function serve(app: Express, port: number, host: string, logger: Logger, onDrained: () => Promise<void> = async () => {}): Promise<Served> {
  const server = http.createServer({ keepAliveTimeout: 65_000 }, app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const actual = (server.address() as { port: number }).port;
  let closing: Promise<void> | undefined;
  return {
    server,
    port: actual,
    shutdown(graceMs = 25_000) {
      closing ??= (async () => {
        logger.info({ graceMs }, 'draining');
        const closed = new Promise<void>((r) => server.close(() => r()));
        // A keep-alive connection whose request finishes during the drain turns idle; close it then, not at the deadline.
        server.closeIdleConnections();
        const idle = setInterval(() => server.closeIdleConnections(), 100);
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        await closed;
        clearInterval(idle);
        clearTimeout(timer);
        await onDrained();
        logger.info('drained');
      })();
      return closing;
    },
  };
}
