import type http from 'node:http';
import type { RequestHandler } from 'express';
import { createProxyMiddleware, debugProxyErrorsPlugin, proxyEventsPlugin } from 'http-proxy-middleware';
import type { GatewayEnv } from '@gateway/config';
import { GatewayError, errorEnvelope } from '@gateway/errors';
import { INTERNAL, type Logger, onClientGone } from '@gateway/service-kit';
import { POOLED_IDLE_MS, ReplicaSet, addressList, serviceEntry, type ServiceName } from '@gateway/topology';
import { ReplicaAgent } from './replica-agent';

/** A base URL as the agent sees its connections: scheme, host and explicit port. */
const origin = (base: string) => {
  const u = new URL(base);
  return `${u.protocol}//${u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`;
};

/**
 * Forwards to a fleet service with http-proxy-middleware. Bodies are never parsed at the edge, and
 * responses (SSE included) are piped as they arrive, unbuffered. `address` is the service's base URL, or its
 * replicas' separated by commas: each request goes to the next one in turn, and one that refuses the connection is
 * skipped for the next (replica-agent.ts).
 */
export function proxyTo(address: string, logger?: Logger): RequestHandler {
  const replicas = new ReplicaSet(addressList(address).map(origin));
  // Without a keep-alive agent every hop opens a connection and the service answers `connection: close`,
  // which the proxy would copy to the client and so close its connection too.
  // `timeout` bounds how long a free (idle) socket stays pooled (Node's agent destroys a free socket on it; a busy
  // one's is the request's, proxyTimeout below): POOLED_IDLE_MS, which a draining service outwaits (serve.ts).
  const sent = new WeakMap<http.IncomingMessage, http.ClientRequest>();
  const agent = new ReplicaAgent(replicas, { keepAlive: true, maxSockets: 512, keepAliveMsecs: 30_000, timeout: POOLED_IDLE_MS });
  return createProxyMiddleware({
    target: replicas.targets[0],
    // One replica: no choice to make per request.
    ...(replicas.targets.length > 1 ? { router: () => replicas.next() } : {}),
    agent,
    changeOrigin: false,
    xfwd: true,
    // The default plugins without the logger, which builds a URL from every response for a logger that is a no-op
    // (about 1.5 % of the edge's thread under load). The error-response plugin is replaced by `on.error` below.
    ejectPlugins: true,
    plugins: [debugProxyErrorsPlugin, proxyEventsPlugin],
    // Idle time on the hop to the service, as long as a synchronous hold lives (15 minutes): a call that keeps the
    // connection silent while it waits for its upstream (an image generation, bounded by the provider's timeout_ms)
    // is never cut here first.
    proxyTimeout: 15 * 60_000,
    on: {
      proxyReq(proxyReq, req, res) {
        sent.set(req, proxyReq);
        // A client that leaves must reach the service: it stops the upstream call and bills only what was delivered.
        // Watched on the socket too (onClientGone): a pipelined request's response never closes when its socket dies.
        const unwatch = onClientGone(res as http.ServerResponse, () => proxyReq.destroy());
        res.once('finish', unwatch);
        res.once('close', unwatch);
      },
      proxyRes(proxyRes, _req, res) {
        // A service that cuts its answer mid-body (speech whose upstream broke) must cut the client's too: the pipe
        // alone would leave the client waiting on an unfinished response, or let it pass for a whole one.
        proxyRes.once('close', () => {
          if (!proxyRes.complete) res.destroy();
        });
      },
      error(err, req, res) {
        const id = String((req.headers as Record<string, unknown>)[INTERNAL.requestId] ?? '');
        // Whether the connection was a pooled one says which failure this was: one a draining service closed while
        // this edge sent on it (docs/reliability.md, "Replicas"), or one that broke mid-call.
        const proxyReq = sent.get(req);
        logger?.warn(
          { requestId: id, code: (err as NodeJS.ErrnoException).code, err: err.message, service: address, reusedConnection: proxyReq?.reusedSocket },
          'proxy to a service failed',
        );
        const body = JSON.stringify(
          errorEnvelope(new GatewayError('upstream_unavailable', 'A gateway service is unreachable; try again shortly'), id),
        );
        if ('writeHead' in res && !res.headersSent) {
          res.writeHead(503, { 'content-type': 'application/json' });
          res.end(body);
        } else res.end();
      },
    },
  }) as RequestHandler;
}

/** Whether the deployment runs this service: its URL variable is set. */
export function deployed(env: GatewayEnv, name: ServiceName): boolean {
  return typeof (env as Record<string, unknown>)[serviceEntry(name).urlEnv] === 'string';
}

/** The routes of a service this deployment leaves out: 404, as for any path the gateway does not serve. */
export function notDeployed(name: ServiceName): RequestHandler {
  return (_req, _res, next) => next(new GatewayError('not_found', `This gateway does not run the ${name} service`));
}
