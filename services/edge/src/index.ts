import type { RequestHandler } from 'express';
import type { BillingPort } from '@gateway/billing-client';
import { GatewayError } from '@gateway/errors';
import type { RateMeter } from '@gateway/ratelimit';
import {
  INTERNAL,
  createServiceApp,
  singleMiddlewareListener,
  trustProxySetting,
  type AppListener,
  type Logger,
  type Metrics,
} from '@gateway/service-kit';
import { keyedOwner, publicOwner, type ServiceName } from '@gateway/topology';
import { pagesHandler } from '@gateway/web-pages';
import { KeyCache } from './auth/key-cache';
import { authenticate, meterRequest } from './auth/authenticate';
import { handOnCredential } from './auth/hand-on-credential';
import { assignRequestId } from './request-id';

export { proxyTo } from './proxy';
export { KeyCache } from './auth/key-cache';

export interface EdgeDeps {
  billing: BillingPort;
  meter: RateMeter;
  logger: Logger;
  metrics: Metrics;
  /** Where each service's requests go (the service table says which paths are whose): its router (embedded) or a proxy to it (fleet). */
  services: Record<ServiceName, RequestHandler>;
  /** The admin API: billing's router (embedded) or a proxy to billing (fleet). */
  admin: RequestHandler;
  internalToken?: string;
  keyCacheTtlMs?: number;
  /** Express's `trust proxy` setting, when the edge runs behind a load balancer that sets X-Forwarded-For. */
  trustProxy?: string;
  /** The meter of public routes, per client address; none means unmetered. */
  publicRateLimit?: { requests: number; intervalMs: number };
}

/**
 * The public listener: request id, auth, rate meter and headers, then the owning service. One middleware for all of
 * it, served without express's router (singleMiddlewareListener): every request of the gateway passes here.
 */
export function createEdge(deps: EdgeDeps): { listener: AppListener; keys: KeyCache } {
  const app = createServiceApp();
  app.set('query parser', 'simple');
  if (deps.trustProxy) app.set('trust proxy', trustProxySetting(deps.trustProxy));
  const keys = new KeyCache(deps.billing, deps.keyCacheTtlMs);
  const auth = authenticate(keys, deps.meter, deps.internalToken);
  const route = (name: ServiceName): RequestHandler => deps.services[name];
  const timing = deps.metrics.httpDuration;
  // The consoles and the pages' assets: static files served here, in both run modes (the status page itself is a
  // public path of the service table).
  const pages = pagesHandler();

  const edge: RequestHandler = (req, res, next) => {
    assignRequestId(req, res);
    const end = timing.startTimer({ service: 'edge' });
    res.once('finish', () => end({ route: keyedOwner(req.path) ?? publicOwner(req.path) ?? 'other', status: String(res.statusCode) }));
    // A %00 in an id or a filter reached PostgreSQL, whose text holds no NUL, and failed there as a 503.
    if (req.url.includes('%00')) return next(new GatewayError('invalid_request', 'The URL holds a NUL character (%00)'));

    const path = req.path;
    if (path === '/admin/v1' || path.startsWith('/admin/v1/')) {
      if (deps.internalToken) req.headers[INTERNAL.token] = deps.internalToken;
      return deps.admin(req, res, next);
    }
    const pub = publicOwner(path);
    if (!path.startsWith('/v1/') && !pub) return pages(req, res, next);
    if (pub && req.method === 'GET') {
      if (deps.internalToken) req.headers[INTERNAL.token] = deps.internalToken;
      if (!deps.publicRateLimit) return route(pub)(req, res, next);
      // Behind a proxy every client shares its address; `trust proxy` (TRUST_PROXY) makes req.ip the client's.
      return meterRequest(deps.meter, res, `ip:${req.ip}`, deps.publicRateLimit).then(() => route(pub)(req, res, next), next);
    }
    // A path no service owns is unknown to everyone alike: 404 before authentication, key or not.
    const owner = keyedOwner(path);
    if (!owner) return next();
    auth(req, res, (err?: unknown) => {
      if (err) return next(err);
      handOnCredential(req, owner);
      route(owner)(req, res, next);
    });
  };

  return { listener: singleMiddlewareListener(app, edge, deps.logger), keys };
}
