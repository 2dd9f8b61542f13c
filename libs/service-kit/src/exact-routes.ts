import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** A route's handler: it answers, or throws (or rejects) for the listener's error envelope. */
export type RouteHandler = (req: Request, res: Response) => Promise<void> | void;

/** Where a route family mounts its POST routes: an ExactRoutes, or an express Router (tests mount on either). */
export interface PostRoutes {
  post(path: string, handler: RouteHandler): unknown;
}

/** The routes of a service whose every path is fixed, as one request handler with `post` to add routes. */
export interface ExactRoutes extends RequestHandler, PostRoutes {
  post(path: string, handler: RouteHandler): ExactRoutes;
}

/**
 * A router for routes without path parameters: one map lookup per request, where express's router walks its
 * layers, matches each one's pattern, and wraps `next` and the request's URL fields at every step. The text routes
 * are the gateway's busiest; through express's router they cost about 8 % more CPU per request (`pnpm bench ab`,
 * docs/benchmarks.md). Matches what express's router matched for these routes: the exact path, with or without one
 * trailing slash, any query string. `before` (the body parser) runs only for a request a route takes; anything
 * else goes on to `next` untouched, so an unknown path is the listener's 404 whatever its body.
 */
export function exactRoutes(before?: RequestHandler): ExactRoutes {
  const routes = new Map<string, RouteHandler>();
  const run = (handler: RouteHandler, req: Request, res: Response, next: NextFunction) => {
    let out: Promise<void> | void;
    try {
      out = handler(req, res);
    } catch (e) {
      return next(e);
    }
    // As express 5 does: a rejection without a reason still becomes an error.
    if (out) out.then(undefined, (e: unknown) => next(e ?? new Error('Rejected promise')));
  };
  const handle = ((req: Request, res: Response, next: NextFunction) => {
    const handler = routes.get(`${req.method} ${req.path}`);
    if (!handler) return next();
    if (!before) return run(handler, req, res, next);
    before(req, res, (err?: unknown) => (err ? next(err) : run(handler, req, res, next)));
  }) as ExactRoutes;
  handle.post = (path, handler) => {
    if (path.includes(':') || path.includes('*') || !path.startsWith('/') || path.endsWith('/')) {
      throw new Error(`exactRoutes: ${path} is not a fixed path`);
    }
    if (routes.has(`POST ${path}`)) throw new Error(`exactRoutes: POST ${path} is mounted twice`);
    routes.set(`POST ${path}`, handler);
    routes.set(`POST ${path}/`, handler);
    return handle;
  };
  return handle;
}
