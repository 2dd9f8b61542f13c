import http from 'node:http';
import type { Express } from 'express';
import { createOpsApp } from './app';
import type { Logger } from './logger';
import type { Metrics } from './metrics';

export interface ServeOptions {
  service: string;
  port: number;
  host: string;
  /** The probes-and-metrics listener (see createOpsApp); 0 picks a free port. */
  metricsPort: number;
  logger: Logger;
  metrics: Metrics;
  ready: () => Promise<void>;
  /** Runs once in-flight requests have finished: close the bus, pools and databases here. */
  onDrained?: () => Promise<void>;
}

export interface Served {
  server: http.Server;
  port: number;
  metricsPort: number;
  /** Stops accepting, lets in-flight requests (streams included) finish up to `graceMs`, then runs `onDrained`. */
  shutdown(graceMs?: number): Promise<void>;
}

function listen(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as { port: number }).port);
    });
  });
}

/** Starts a service's public (or internal) listener and its probes-and-metrics listener beside it. */
export async function serve(app: Express, opts: ServeOptions): Promise<Served> {
  const { logger } = opts;
  let closing: Promise<void> | undefined;
  // Node's defaults, stated because they matter: both bound only how long a client may take to send its request
  // (headers; headers and body), which stops slowloris clients, never how long the answer may take, so an image
  // generation that holds the connection for minutes is not cut. Nothing else here times a request out.
  const server = http.createServer({ keepAliveTimeout: 65_000, headersTimeout: 60_000, requestTimeout: 300_000 }, app);
  const ops = http.createServer(createOpsApp({ ...opts, draining: () => closing !== undefined }));
  const port = await listen(server, opts.port, opts.host);
  let metricsPort: number;
  try {
    metricsPort = await listen(ops, opts.metricsPort, opts.host);
  } catch (e) {
    server.close();
    throw e;
  }
  return {
    server,
    port,
    metricsPort,
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
        await opts.onDrained?.();
        // Probes stay up through the drain (readiness says "draining"), so an orchestrator sees why.
        await new Promise<void>((r) => {
          ops.close(() => r());
          ops.closeAllConnections();
        });
        logger.info('drained');
      })();
      return closing;
    },
  };
}

/** The listener variables every fleet process reads (the env schema's PORT, HOST and METRICS_PORT). */
export interface ListenEnv {
  PORT: number;
  HOST: string;
  METRICS_PORT: number;
}

/**
 * A fleet process's listeners, as every service's main.ts opens them: its app on PORT, probes and metrics on
 * METRICS_PORT, and a log line saying where; `stop` drains it.
 */
export async function serveFleetProcess(
  app: Express,
  env: ListenEnv,
  opts: Omit<ServeOptions, 'port' | 'host' | 'metricsPort'> & { extra?: Record<string, unknown> },
): Promise<Served> {
  const served = await serve(app, { ...opts, port: env.PORT, host: env.HOST, metricsPort: env.METRICS_PORT });
  opts.logger.info({ port: served.port, metricsPort: served.metricsPort, ...opts.extra }, `${opts.service} listening`);
  return served;
}
