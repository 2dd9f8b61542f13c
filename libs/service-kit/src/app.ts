import express, { type Express } from 'express';
import type { Metrics } from './metrics';
import type { Logger } from './logger';

export interface ServiceAppOptions {
  service: string;
  logger: Logger;
  metrics: Metrics;
  /** Throws when the service cannot serve (database, bus or a dependency down). */
  ready: () => Promise<void>;
}

/**
 * The listener every fleet service starts from: liveness, readiness and Prometheus metrics on its own port.
 * Routes are mounted by the caller; the embedded gateway mounts the same routers on the edge's app instead.
 */
export function createServiceApp(opts: ServiceAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', service: opts.service });
  });
  app.get('/readyz', async (_req, res) => {
    try {
      await opts.ready();
      res.json({ status: 'ready', service: opts.service });
    } catch (e) {
      opts.logger.warn({ err: e }, 'not ready');
      res.status(503).json({ status: 'not_ready', service: opts.service, reason: (e as Error).message });
    }
  });
  app.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', opts.metrics.registry.contentType);
    res.send(await opts.metrics.registry.metrics());
  });
  return app;
}
