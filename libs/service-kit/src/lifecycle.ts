import type { RequestHandler } from 'express';
import { type ServiceName, startOrder } from '@gateway/topology';

/**
 * One part of a process with a start and a stop: a service of the table, or what the process opened for its
 * services (the bus, a meter, databases, the spending services' open holds). Every hook is optional. A process runs
 * its parts in one list (startParts): each phase calls them in the list's order, the stop phases in reverse, so a
 * part starts after what it needs and stops before it. The phases, in the order a process goes through them:
 */
export interface Lifecycle {
  readonly name: string;
  /** Before the listener opens: subscribe, start workers and sweepers. */
  start?(): Promise<void> | void;
  /** Once the listener answers, at `url` (reachable from this host): what calls the process's own API. */
  listening?(url: string): void;
  /** Throws when this pod cannot serve itself (readiness); a shared dependency's outage is never this pod's. */
  ready?(): Promise<void>;
  /** Shutdown has begun, before in-flight requests are waited for: end what would hold the drain open (streams). */
  preClose?(): void;
  /** In-flight requests have finished: stop producing, and publish the last of it before the bus closes. */
  drain?(): Promise<void>;
  /** Every drain has run: release what is left (ledgers, pools, databases). */
  close?(): Promise<void>;
}

/** A service's routes: its public (keyed or keyless) ones, the admin API's owner, and a fleet service's own internal ones. */
export interface ServiceRouters {
  public: RequestHandler;
  /** /admin/v1/* (the service table's admin owner). */
  admin?: RequestHandler;
  /** Routes that check the internal token themselves, mounted before the token check (billing's /internal/*). */
  internal?: RequestHandler;
}

/** A service of the table as both run modes host it: its routes and its lifecycle. */
export interface GatewayService extends Lifecycle {
  readonly name: ServiceName;
  readonly routers: ServiceRouters;
}

/** `services` in the table's start order (startOrder): each after what it starts after. */
export function inStartOrder<S extends { name: ServiceName }>(services: readonly S[]): S[] {
  const byName = new Map(services.map((s) => [s.name, s]));
  return startOrder([...byName.keys()]).map((n) => byName.get(n) as S);
}
