import express, { type Express } from 'express';
import { GatewayError, errorHandler } from '@gateway/errors';
import { INTERNAL } from './context';
import type { Metrics } from './metrics';
import type { Logger } from './logger';

/** The base of every listener: no `x-powered-by`, no ETags (answers are per account and never revalidated). */
export function createServiceApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  return app;
}

export interface OpsAppOptions {
  service: string;
  logger: Logger;
  metrics: Metrics;
  /** Throws when the service cannot serve (database, bus or a dependency down). */
  ready: () => Promise<void>;
  /** True once the service has begun to drain: readiness fails so load balancers stop sending work. */
  draining: () => boolean;
}

/**
 * Liveness, readiness and Prometheus metrics, on their own listener (METRICS_PORT): the metrics name providers
 * and upstream models, which no client may see, so they never share the public listener.
 */
export function createOpsApp(opts: OpsAppOptions): Express {
  const app = createServiceApp();
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', service: opts.service });
  });
  app.get('/readyz', async (_req, res) => {
    if (opts.draining()) return void res.status(503).json({ status: 'draining', service: opts.service });
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
  app.use((_req, res) => {
    res.status(404).json({ status: 'not_found', service: opts.service });
  });
  return app;
}

/** The tail of every listener: an unknown path is a 404 in the envelope, and anything thrown becomes the envelope. */
export function finishApp(app: Express, logger: Logger): void {
  app.use((req, _res, next) => next(new GatewayError('not_found', `No route ${req.method} ${req.path}`)));
  app.use(
    errorHandler(
      (req) => String(req.headers[INTERNAL.requestId] ?? ''),
      (err, req) => logger.error({ err, path: req.path }, 'unhandled error'),
    ),
  );
}
