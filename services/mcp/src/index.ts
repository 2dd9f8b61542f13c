import { Router } from 'express';
import type { EventBus, Subscription } from '@gateway/bus';
import type { ModelRegistry } from '@gateway/config';
import type { Db } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';
import { EdgeClient } from './edge-client';
import { mountMcp } from './routes';
import { SessionStore } from './sessions';
import { consumeJobEvents } from './stream/job-events';
import { Notifier } from './stream/notifier';

export { migrations } from './migrations';
export { ALL_TOOLS, availableTools } from './tools';

export interface McpDeps {
  db: Db;
  bus: EventBus;
  registry: ModelRegistry;
  logger: Logger;
  /** The edge's base URL, read per call (embedded, the listener's port is known only once it listens). */
  edgeUrl: () => string;
}

export interface McpService {
  /** POST, GET and DELETE /v1/mcp. */
  router: Router;
  /** Subscribes to job state events. */
  start(): Promise<void>;
  /** Ends every open stream now: a drain would otherwise wait out its grace period on them. */
  endStreams(): void;
  /** Unsubscribes; the database is the caller's to close. */
  stop(): Promise<void>;
}

export function createMcpService(deps: McpDeps, opts: { maxRequestBody: string; pollMs?: number; keepAliveMs?: number }): McpService {
  const sessions = new SessionStore(deps.db);
  const notifier = new Notifier(sessions);
  const edge = new EdgeClient(deps.edgeUrl);
  const draining = new AbortController();
  const router = Router();
  mountMcp(
    router,
    { edge, sessions, notifier, registry: deps.registry, draining: draining.signal },
    { maxRequestBody: opts.maxRequestBody, stream: { pollMs: opts.pollMs ?? 1000, keepAliveMs: opts.keepAliveMs ?? 15_000 } },
  );
  let subscription: Subscription | undefined;
  return {
    router,
    async start() {
      subscription = await consumeJobEvents(deps.bus, sessions, notifier, deps.logger);
    },
    endStreams: () => draining.abort(),
    async stop() {
      draining.abort();
      await subscription?.close();
    },
  };
}
