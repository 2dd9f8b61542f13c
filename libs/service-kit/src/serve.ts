import http from 'node:http';
import net, { type Socket } from 'node:net';
import { GatewayError, errorEnvelope } from '@gateway/errors';
import { type AppListener, createOpsApp } from './app';
import { newRequestId } from './context';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { claimHeldPort } from './port-handoff';
import { closingWhenDraining } from './drain-response';
import { POOLED_IDLE_MS } from '@gateway/topology';
import { type Dependencies, watchDependencies } from './dependencies';
import { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, type RefusedBecause, limitConnections } from './connection-limits';

export interface ServeOptions {
  service: string;
  port: number;
  host: string;
  /** The probes-and-metrics listener (see createOpsApp); 0 picks a free port. */
  metricsPort: number;
  logger: Logger;
  metrics: Metrics;
  /**
   * Whether this pod can serve traffic itself (its own state, e.g. a failed ledger journal), never whether a shared
   * dependency answers: an outage of billing, PostgreSQL or Redis would otherwise take every replica out of rotation
   * at once, including the routes that do not need it (docs/deploy.md, "Readiness").
   */
  ready: () => Promise<void>;
  /** The dependencies this process calls, checked in the background and shown on /healthz, /readyz and /metrics only. */
  dependencies?: Dependencies;
  /**
   * The time this process has from SIGTERM until it must have exited (DRAIN_TIMEOUT_MS; in Kubernetes the grace
   * period minus the preStop sleep). Default DEFAULT_DRAIN_TIMEOUT_MS.
   */
  drainTimeoutMs?: number;
  /** Runs once in-flight requests have finished: close the bus, pools and databases here. */
  onDrained?: () => Promise<void>;
  /**
   * The end of the grace period kept for onDrained: connections still open are cut this long before the deadline,
   * so the requests they carried can still close their holds (over the bus onDrained is about to close). Default 0.
   */
  drainReserveMs?: number;
  /** How long a client may take to send a request's headers (HTTP_HEADERS_TIMEOUT_MS); default 60 s. */
  headersTimeoutMs?: number;
  /** How long a client may take to send a whole request, headers and body (HTTP_REQUEST_TIMEOUT_MS); default 300 s. */
  requestTimeoutMs?: number;
  /** Open connections each listener accepts (HTTP_MAX_CONNECTIONS); default DEFAULT_MAX_CONNECTIONS. */
  maxConnections?: number;
  /**
   * Clients reach this listener directly (the embedded gateway, the edge): it also bounds the connections of each
   * client address (HTTP_MAX_CONNECTIONS_PER_ADDRESS, default DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, 0 for none). An
   * internal service's callers are its few peers, which share one address in `pnpm fleet`: only the total applies.
   */
  public?: { maxConnectionsPerAddress?: number };
  /** The longest drain notice (DRAIN_NOTICE_MS for the public listener, INTERNAL_DRAIN_NOTICE_MS otherwise). */
  drainNoticeMs?: number;
}

export interface Served {
  server: http.Server;
  port: number;
  metricsPort: number;
  /**
   * Stops accepting, lets in-flight requests (streams included) finish, cuts what is still open early enough for
   * `drainReserveMs` and CLOSE_RESERVE_MS to fit in `graceMs` (default: the drain timeout), then runs `onDrained`.
   */
  shutdown(graceMs?: number): Promise<void>;
}

/** What a process has to stop when nothing says otherwise: a 30 s Kubernetes grace period minus the 5 s preStop. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 25_000;

/**
 * The end of the drain kept for onDrained's last steps after the holds: closing the bus (which flushes what is
 * queued, settles included), the pools and the databases.
 */
export const CLOSE_RESERVE_MS = 2_000;

/**
 * The start of a drain during which the listener no longer accepts connections but serves those it has, each answer
 * with `Connection: close`, and closes none of them while idle. A keep-alive connection closed while idle races a
 * request its caller is sending on it at that moment: the request fails, and the caller cannot know that it was never
 * read, so it may not resend it (docs/reliability.md, "Replicas"). The notice ends as soon as the callers have closed
 * every connection, so it costs nothing when they keep to their bound; at the latest after this long, when it closes
 * the idle ones. A caller's new connection is refused from the start, which it may send elsewhere (the request
 * provably never left it). Found by the rolling restart of test-e2e/reliability/replica-faults.e2e.ts.
 *
 * The public listener's callers are clients, told to keep a connection idle at most POOLED_IDLE_MS (docs/api-notes.md,
 * "Connections"): this is longer by a margin for a loaded machine's late timers.
 */
export const DRAIN_NOTICE_MS = POOLED_IDLE_MS + 1_000;

/**
 * The notice of an internal listener, whose callers are our own processes (the edge's proxy agent, the billing and
 * media clients), each dropping a pooled connection idle for POOLED_IDLE_MS: since the notice ends once they have,
 * it can wait longer for a caller whose event loop runs seconds late on a loaded machine (its idle timer fires late,
 * and it may still pick that connection) at no cost to a drain whose callers are on time.
 */
export const INTERNAL_DRAIN_NOTICE_MS = POOLED_IDLE_MS + 4_000;

async function listen(server: http.Server, port: number, host: string): Promise<number> {
  await claimHeldPort(port);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as { port: number }).port);
    });
  });
}

const answered = new WeakSet<Socket>();

/**
 * What Node refuses itself, before the app sees a request (a header section past its 16 KB, a request not received
 * within the timeouts, bytes that are not HTTP), answered in the API's envelope with a request id like every other
 * refusal, where Node's own answer is a bare status line. Then the connection closes: at once when the request
 * timed out or the app already holds it, a moment later otherwise, so that closing under bytes still unread (a
 * header flood) does not reset the connection before the client has read the answer.
 */
function refuseClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // The parser reports every later chunk again: the first answer stands.
  if (answered.has(socket)) return;
  answered.add(socket);
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'The request header fields are larger than the server reads (16 KB)']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request was not received in time']
        : [400, `The request is not valid HTTP (${err.code ?? 'unreadable'})`];
  const id = newRequestId();
  const body = JSON.stringify(errorEnvelope(new GatewayError('invalid_request', message, { status }), id));
  socket.write(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nx-gateway-request-id: ${id}\r\n\r\n${body}`,
  );
  // A request the app already holds (its body still coming) must not complete after this answer, and a client that
  // timed out has nothing unread: closed at once, as Node does.
  if (inFlight || err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    socket.destroy();
    return;
  }
  socket.end();
  setTimeout(() => socket.destroy(), 1_000).unref();
}

/** Starts a service's public (or internal) listener and its probes-and-metrics listener beside it. */
export async function serve(app: AppListener, opts: ServeOptions): Promise<Served> {
  const { logger } = opts;
  let closing: Promise<void> | undefined;
  // Both bound only how long a client may take to send its request (headers; headers and body), which stops
  // slowloris clients, never how long the answer may take, so an image generation that holds the connection for
  // minutes is not cut. Nothing else here times a request out. Node checks them on an interval (default 30 s), so a
  // timeout is only as precise as that: the check runs at half the shorter one, 30 s at most (the defaults' 30 s).
  const headersTimeout = opts.headersTimeoutMs ?? 60_000;
  const requestTimeout = opts.requestTimeoutMs ?? 300_000;
  const server = http.createServer(
    {
      ...app.serverOptions,
      // Draining: every answer closes its connection (DRAIN_NOTICE_MS says why).
      ServerResponse: closingWhenDraining(app.serverOptions?.ServerResponse ?? http.ServerResponse, () => closing !== undefined),
      keepAliveTimeout: 65_000,
      headersTimeout,
      requestTimeout,
      connectionsCheckingInterval: Math.min(30_000, Math.max(10, Math.floor(Math.min(headersTimeout, requestTimeout) / 2))),
    },
    app,
  );
  server.on('clientError', refuseClientError);
  const dependencies = watchDependencies(opts.dependencies ?? {}, opts.metrics, logger);
  const ops = http.createServer(createOpsApp({ ...opts, dependencies: dependencies.report, draining: () => closing !== undefined }));
  // The probes' listener too: a flood there would fail the liveness probe and have the orchestrator kill the process.
  const limits = {
    max: opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    perAddress: opts.public ? (opts.public.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS) : 0,
  };
  const refused = opts.metrics.counter(
    'gateway_connections_refused_total',
    "Connections closed as accepted: past the listener's total, or past one client address's share",
    ['listener', 'reason'],
  );
  let warnedAt = 0;
  const onRefused = (listener: string) => (reason: RefusedBecause) => {
    refused.inc({ listener, reason });
    // Once a minute at most: a flood must not become a flood of log lines.
    if (Date.now() - warnedAt < 60_000) return;
    warnedAt = Date.now();
    logger.warn({ listener, reason, limits }, 'refusing connections past the limit');
  };
  limitConnections(server, limits, onRefused('api'));
  limitConnections(ops, limits, onRefused('ops'));
  const port = await listen(server, opts.port, opts.host);
  let metricsPort: number;
  try {
    metricsPort = await listen(ops, opts.metricsPort, opts.host);
  } catch (e) {
    server.close();
    dependencies.stop();
    throw e;
  }
  return {
    server,
    port,
    metricsPort,
    shutdown(graceMs = opts.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS) {
      closing ??= (async () => {
        // Requests get what the reserves leave; a drain shorter than the reserves cuts them at once.
        // cutAfterMs counts from SIGTERM, notice included: the cut comes when the reserves are left, however long the notice.
        const cutAfterMs = Math.max(0, graceMs - CLOSE_RESERVE_MS - (opts.drainReserveMs ?? 0));
        const notice = Math.min(opts.drainNoticeMs ?? (opts.public ? DRAIN_NOTICE_MS : INTERNAL_DRAIN_NOTICE_MS), cutAfterMs);
        logger.info({ graceMs, cutAfterMs }, 'draining');
        // Registered first: the listener may have no connection left (so emit 'close') before the notice ends.
        const closed = new Promise<void>((r) => server.once('close', () => r()));
        // Stops accepting only: http.Server#close would also close the idle keep-alive connections at once.
        net.Server.prototype.close.call(server);
        // The notice ends early once the callers have closed every connection (the listener's 'close').
        let noticeTimer: NodeJS.Timeout | undefined;
        if (notice > 0) await Promise.race([closed, new Promise((r) => (noticeTimer = setTimeout(r, notice)))]);
        clearTimeout(noticeTimer);
        // Closes what is idle now and stops Node's connection checks; a connection whose request finishes later
        // turns idle, and is closed then (below), not at the deadline.
        server.close();
        const idle = setInterval(() => server.closeIdleConnections(), 100);
        const timer = setTimeout(() => {
          logger.warn({ cutAfterMs }, 'drain deadline: cutting the connections still open');
          server.closeAllConnections();
        }, cutAfterMs - notice);
        await closed;
        clearInterval(idle);
        clearTimeout(timer);
        dependencies.stop();
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

/** The listener variables every fleet process reads (the env schema's PORT, HOST, METRICS_PORT and HTTP_*). */
export interface ListenEnv {
  PORT: number;
  HOST: string;
  METRICS_PORT: number;
  HTTP_HEADERS_TIMEOUT_MS?: number;
  HTTP_REQUEST_TIMEOUT_MS?: number;
  HTTP_MAX_CONNECTIONS?: number;
  HTTP_MAX_CONNECTIONS_PER_ADDRESS?: number;
  DRAIN_TIMEOUT_MS?: number;
}

/** The listener settings both run modes read from the environment; `publicListener` for the one clients reach. */
export function listenOptionsOf(
  env: ListenEnv,
  publicListener: boolean,
): Pick<ServeOptions, 'port' | 'host' | 'metricsPort' | 'headersTimeoutMs' | 'requestTimeoutMs' | 'maxConnections' | 'drainTimeoutMs' | 'public'> {
  return {
    port: env.PORT,
    host: env.HOST,
    metricsPort: env.METRICS_PORT,
    headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
    maxConnections: env.HTTP_MAX_CONNECTIONS,
    drainTimeoutMs: env.DRAIN_TIMEOUT_MS,
    public: publicListener ? { maxConnectionsPerAddress: env.HTTP_MAX_CONNECTIONS_PER_ADDRESS } : undefined,
  };
}

/**
 * A fleet process's listeners, as every service's main.ts opens them: its app on PORT, probes and metrics on
 * METRICS_PORT, and a log line saying where; `stop` drains it.
 */
export async function serveFleetProcess(
  app: AppListener,
  env: ListenEnv,
  opts: Omit<ServeOptions, 'port' | 'host' | 'metricsPort' | 'public'> & { extra?: Record<string, unknown>; public?: boolean },
): Promise<Served> {
  const { public: isPublic = false, ...rest } = opts;
  const served = await serve(app, { ...rest, ...listenOptionsOf(env, isPublic) });
  opts.logger.info({ port: served.port, metricsPort: served.metricsPort, ...opts.extra }, `${opts.service} listening`);
  return served;
}
