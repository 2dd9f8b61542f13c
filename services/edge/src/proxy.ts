import type http from 'node:http';
import type { RequestHandler } from 'express';
import { type Dispatcher, Pool } from 'undici';
import type { GatewayEnv } from '@gateway/config';
import { GatewayError, errorEnvelope } from '@gateway/errors';
import { INTERNAL, type Logger, onClientGone } from '@gateway/service-kit';
import { CONNECT_TIMEOUT_MS, POOLED_IDLE, ReplicaSet, addressList, neverReached, serviceEntry, type ServiceName } from '@gateway/topology';
import { forwardedHeaders, responseHeaders } from './proxy-headers';

/** A base URL as a pool sees it: scheme, host and explicit port. */
const origin = (base: string) => {
  const u = new URL(base);
  return `${u.protocol}//${u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`;
};

/**
 * Idle time on the hop to the service, as long as a synchronous hold lives (15 minutes): a call that keeps the
 * connection silent while it waits for its upstream (an image generation, bounded by the provider's timeout_ms) is
 * never cut here first.
 */
const SILENCE_MS = 15 * 60_000;

/**
 * Forwards to a fleet service over undici (docs/decisions/010). Bodies are never parsed at the edge: the client's
 * request streams to the service and the answer (SSE included) streams back as it arrives, with backpressure both
 * ways. `address` is the service's base URL, or its replicas' separated by commas: each request goes to the next one
 * in turn, and one that refuses the connection is left out and the request, not a byte of it sent yet, goes to the
 * next (libs/topology/src/replicas.ts).
 */
export function proxyTo(address: string, logger?: Logger): RequestHandler {
  const replicas = new ReplicaSet(addressList(address).map(origin));
  // Keep-alive pools, one per replica; an idle connection is closed after POOLED_IDLE_MS, which a draining service
  // outwaits (serve.ts).
  const pools = new Map(
    replicas.targets.map((target) => [
      target,
      new Pool(target, {
        connections: 512,
        pipelining: 1,
        ...POOLED_IDLE,
        headersTimeout: SILENCE_MS,
        bodyTimeout: SILENCE_MS,
        connect: { timeout: CONNECT_TIMEOUT_MS, noDelay: true },
      }),
    ]),
  );

  return (req, res) => {
    const headers = forwardedHeaders(req);
    const hasBody =
      req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
    const tried = new Set<string>();
    const send = () => {
      let target = replicas.next();
      if (tried.has(target)) target = replicas.targets.find((t) => !tried.has(t)) ?? target;
      tried.add(target);
      const options: Dispatcher.DispatchOptions = { path: req.url, method: req.method as Dispatcher.HttpMethod, headers, body: hasBody ? req : null };
      (pools.get(target) as Pool).dispatch(
        options,
        answer(res, (err) => {
          // Never reached: not a byte left, so the request (its body still unread) may go to another replica.
          if (neverReached(err) && !res.headersSent) {
            replicas.eject(target);
            if (tried.size < replicas.targets.length) return send();
          }
          failed(err, target);
        }),
      );
    };
    const failed = (err: Error, target: string) => {
      const id = String(req.headers[INTERNAL.requestId] ?? '');
      logger?.warn({ requestId: id, code: (err as NodeJS.ErrnoException).code, err: err.message, service: target }, 'proxy to a service failed');
      // A service that cut its answer mid-body must cut the client's too: ending it would pass for a whole answer.
      if (res.headersSent) return void res.destroy();
      const body = JSON.stringify(errorEnvelope(new GatewayError('upstream_unavailable', 'A gateway service is unreachable; try again shortly'), id));
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    send();
  };
}

/** The dispatch handler that writes the service's answer to the client as it arrives. */
function answer(res: http.ServerResponse, onFailure: (err: Error) => void): Dispatcher.DispatchHandlers {
  let abort: ((err?: Error) => void) | undefined;
  let gone = false;
  // A client that leaves must reach the service: it stops the upstream call and bills only what was delivered.
  // Watched on the socket too (onClientGone): a pipelined request's response never closes when its socket dies.
  const unwatch = onClientGone(res, () => {
    gone = true;
    abort?.(new Error('the client closed the connection'));
  });
  return {
    onConnect(abortRequest) {
      abort = abortRequest;
      if (gone) abortRequest(new Error('the client closed the connection'));
    },
    onHeaders(status, raw, resume, statusText) {
      if (statusText) res.writeHead(status, statusText, responseHeaders(raw));
      else res.writeHead(status, responseHeaders(raw));
      res.on('drain', () => resume());
      return true;
    },
    onData(chunk) {
      return res.write(chunk);
    },
    onComplete() {
      unwatch();
      res.end();
    },
    onError(err) {
      unwatch();
      if (gone) return void res.destroy();
      onFailure(err);
    },
  };
}

/** Whether the deployment runs this service: its URL variable is set. */
export function deployed(env: GatewayEnv, name: ServiceName): boolean {
  return typeof (env as Record<string, unknown>)[serviceEntry(name).urlEnv] === 'string';
}

/** The routes of a service this deployment leaves out: 404, as for any path the gateway does not serve. */
export function notDeployed(name: ServiceName): RequestHandler {
  return (_req, _res, next) => next(new GatewayError('not_found', `This gateway does not run the ${name} service`));
}
