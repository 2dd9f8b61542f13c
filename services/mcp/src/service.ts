import { Router } from 'express';
import type { EventBus, Subscription } from '@gateway/bus';
import type { ModelRegistry } from '@gateway/config';
import type { Db } from '@gateway/db';
import type { RateMeter } from '@gateway/ratelimit';
import type { Logger } from '@gateway/service-kit';
import { EdgeClient } from './edge-client';
import type { McpLimits } from './limits';
import { mountMcp } from './routes';
import { SessionStore } from './sessions';
import { startSweeper } from './sweeper';
import { consumeJobEvents } from './stream/job-events';
import { StreamHub } from './stream/hub';
import { Notifier } from './stream/notifier';

export { migrations } from './migrations';
export { ALL_TOOLS, availableTools } from './tools';
export { type McpLimits, mcpLimitsOf } from './limits';

export interface McpDeps {
  db: Db;
  bus: EventBus;
  registry: ModelRegistry;
  logger: Logger;
  /** The account request meter the edge counts on (the same one: each batch message past the first is counted here). */
  meter: RateMeter;
  /** The edge's base URL, read per call (embedded, the listener's port is known only once it listens). */
  edgeUrl: () => string;
}

export interface McpOptions {
  maxRequestBody: string;
  limits: McpLimits;
  /** How often this process's one poller looks for messages queued, and sessions ended, by other replicas. */
  pollMs?: number;
  keepAliveMs?: number;
}

export interface McpService {
  /** POST, GET and DELETE /v1/mcp. */
  router: Router;
  /** Subscribes to job state events and starts the idle-session sweep. */
  start(): Promise<void>;
  /** Ends every open stream now: a drain would otherwise wait out its grace period on them. */
  endStreams(): void;
  /** Unsubscribes; the database is the caller's to close. */
  stop(): Promise<void>;
  /** Open GET streams on this process, and the store (tests). */
  readonly hub: StreamHub;
  readonly sessions: SessionStore;
}

export function createMcpService(deps: McpDeps, opts: McpOptions): McpService {
  const { limits } = opts;
  const sessions = new SessionStore(deps.db, { idleTtlMs: limits.sessionIdleTtlMs, perAccount: limits.sessionsPerAccount });
  // Streams keep their sessions alive: touched well within the TTL, so no replica's sweep ends one that is in use.
  const touchMs = Math.min(60_000, limits.sessionIdleTtlMs / 4);
  const hub = new StreamHub(sessions, { pollMs: opts.pollMs ?? 1000, touchMs, streamsPerAccount: limits.streamsPerAccount }, deps.logger);
  const notifier = new Notifier(sessions, hub);
  const edge = new EdgeClient(deps.edgeUrl);
  const draining = new AbortController();
  const router = Router();
  mountMcp(
    router,
    { edge, sessions, hub, notifier, meter: deps.meter, registry: deps.registry, draining: draining.signal },
    { maxRequestBody: opts.maxRequestBody, stream: { keepAliveMs: opts.keepAliveMs ?? 15_000 }, limits },
  );
  let subscription: Subscription | undefined;
  let sweeper: { stop(): void } | undefined;
  return {
    router,
    hub,
    sessions,
    async start() {
      subscription = await consumeJobEvents(deps.bus, sessions, notifier, deps.logger);
      sweeper = startSweeper(sessions, touchMs, deps.logger);
    },
    endStreams: () => draining.abort(),
    async stop() {
      draining.abort();
      hub.stop();
      sweeper?.stop();
      await subscription?.close();
    },
  };
}
