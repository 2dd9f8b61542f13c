import http from 'node:http';
import express, { type ErrorRequestHandler, type Express, type Request, type RequestHandler, type Response } from 'express';
import { GatewayError, errorHandler } from '@gateway/errors';
import { INTERNAL } from './context';
import type { Metrics } from './metrics';
import type { DependencyReport } from './dependencies';
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
  /** Throws when this pod cannot serve traffic itself; never for a shared dependency's outage (serve.ts says why). */
  ready: () => Promise<void>;
  /** The background checks' findings per dependency, shown in the probes' bodies (dependencies.ts). */
  dependencies?: DependencyReport;
  /** True once the service has begun to drain: readiness fails so load balancers stop sending work. */
  draining: () => boolean;
}

/**
 * Liveness, readiness and Prometheus metrics, on their own listener (METRICS_PORT): the metrics name providers
 * and upstream models, which no client may see, so they never share the public listener.
 */
export function createOpsApp(opts: OpsAppOptions): Express {
  const app = createServiceApp();
  const dependencies = () => opts.dependencies?.() ?? {};
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', service: opts.service, dependencies: dependencies() });
  });
  app.get('/readyz', async (_req, res) => {
    if (opts.draining()) return void res.status(503).json({ status: 'draining', service: opts.service });
    try {
      await opts.ready();
      res.json({ status: 'ready', service: opts.service, dependencies: dependencies() });
    } catch (e) {
      opts.logger.warn({ err: e }, 'not ready');
      res.status(503).json({ status: 'not_ready', service: opts.service, reason: (e as Error).message, dependencies: dependencies() });
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
  const { notFound, onError } = envelopeTail(logger);
  app.use(notFound);
  app.use(onError);
}

function envelopeTail(logger: Logger): { notFound: RequestHandler; onError: ErrorRequestHandler } {
  return {
    notFound: (req, _res, next) => next(new GatewayError('not_found', `No route ${req.method} ${req.path}`)),
    onError: errorHandler(
      (req) => String(req.headers[INTERNAL.requestId] ?? ''),
      (err, req) => logger.error({ err, path: req.path }, 'unhandled error'),
    ),
  };
}

/**
 * The listener of an app that is one middleware and finishApp's tail (the edge), without express's app.handle and
 * router around it. Each request still starts as express starts it: the app's request and response prototypes
 * (req.path, req.ip, req.query under the app's settings; res.json...), the circular references, `res.locals`, and
 * the URL fields the top router sets, so every router and handler behind the middleware sees what it saw before.
 * What goes is the per-request work of a router of two layers for every request of the gateway: the final
 * handler and its bound logger made and dropped, `next` and URL-restoring closures, a pattern match per layer.
 * `pnpm bench ab`, the edge's express router against this, chat at c=50: CPU per request × 0.89-0.98
 * (docs/benchmarks.md).
 */
export function singleMiddlewareListener(app: Express, middleware: RequestHandler, logger: Logger): AppListener {
  const { IncomingMessage, ServerResponse } = requestClassesOf(app);
  const { notFound, onError } = envelopeTail(logger);
  // Never called: onError always answers, as the tail of every app does.
  const nothingAfter = () => {};
  const listener: http.RequestListener = (incoming, outgoing) => {
    const req = incoming as Request;
    const res = outgoing as Response;
    req.res = res;
    res.req = req;
    // Born with the app's prototypes when the server was made with serverOptions (serve does); otherwise given them.
    if (!(req instanceof IncomingMessage)) Object.setPrototypeOf(req, app.request);
    if (!(res instanceof ServerResponse)) Object.setPrototypeOf(res, app.response);
    res.locals = Object.create(null);
    req.originalUrl = req.url;
    req.baseUrl = '';
    const fail = (err: unknown) => onError(err, req, res, nothingAfter);
    const done = (err?: unknown) => (err ? fail(err) : notFound(req, res, fail));
    try {
      middleware(req, res, done);
    } catch (e) {
      fail(e);
    }
  };
  return Object.assign(listener, { serverOptions: { IncomingMessage, ServerResponse } });
}

/**
 * A request listener that may say which request and response classes its server should make (serve passes them
 * to http.createServer); a plain listener works too.
 */
export type AppListener = http.RequestListener & { serverOptions?: Pick<http.ServerOptions, 'IncomingMessage' | 'ServerResponse'> };

/**
 * Request and response classes whose instances are born with the app's prototypes (req.ip, res.json... under the
 * app's settings). Express gives every request and response them with Object.setPrototypeOf, which turns each
 * pair into objects of a shape of their own, and every property access on them after that slower; a server made
 * with these classes needs none of it.
 */
function requestClassesOf(app: Express) {
  class AppRequest extends http.IncomingMessage {}
  Object.setPrototypeOf(AppRequest.prototype, app.request);
  class AppResponse<R extends http.IncomingMessage = http.IncomingMessage> extends http.ServerResponse<R> {}
  Object.setPrototypeOf(AppResponse.prototype, app.response);
  return { IncomingMessage: AppRequest, ServerResponse: AppResponse };
}

/** Middlewares run one after the other as one: each goes on to the next by calling `next()`; an error skips the rest. */
export function inTurn(...handlers: RequestHandler[]): RequestHandler {
  return (req, res, next) => {
    let i = 0;
    const step = (err?: unknown) => {
      if (err || i === handlers.length) return next(err);
      const handler = handlers[i++];
      try {
        handler(req, res, step);
      } catch (e) {
        next(e);
      }
    };
    step();
  };
}

/**
 * A fleet service's listener: its middlewares in turn, then the 404 and error envelope, served as the edge is
 * (singleMiddlewareListener): each internal hop of a call (edge to text, text to billing for its holds) is spared
 * express's router too.
 */
export function serviceListener(logger: Logger, ...handlers: RequestHandler[]): AppListener {
  return singleMiddlewareListener(createServiceApp(), inTurn(...handlers), logger);
}
