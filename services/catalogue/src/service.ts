import { Router } from 'express';
import type { ModelRegistry } from '@gateway/config';
import type { FirstSeen } from './catalog/item';
import { mountCatalog } from './catalog/routes';
import { mountModels } from './models/routes';
import type { SharedAnswers } from './shared-answers';
import { mountStats } from './stats/routes';
import type { StatsStore } from './stats/store';
import { mountStatus, type StatusRouteDeps } from './status/routes';

export interface CatalogueService {
  /** Public routes: no key needed. */
  router: Router;
}

/** What /v1/stats and /v1/status need; without it (tests of the listings alone) those two routes are not mounted. */
export interface CatalogueState {
  /** `shared`: where the fleet's replicas keep one answer for all (Redis); absent, each process keeps its own. */
  stats: { store: StatsStore; ttlMs: number; shared?: SharedAnswers };
  status: StatusRouteDeps;
  now: () => Date;
  /** When each model first appeared (the catalogue's `addedAt` where the config gives none). */
  firstSeen?: FirstSeen;
}

export function createCatalogueService(registry: ModelRegistry, state?: CatalogueState): CatalogueService {
  const router = Router();
  mountModels(router, registry);
  mountCatalog(router, registry, state?.firstSeen);
  if (state) {
    mountStats(router, registry, state.stats.store, { ttlMs: state.stats.ttlMs, now: state.now, shared: state.stats.shared });
    mountStatus(router, state.status);
  }
  return { router };
}
