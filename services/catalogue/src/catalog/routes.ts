import type { Router } from 'express';
import type { ModelRegistry } from '@gateway/config';
import { cachedJson } from '../cached-json';
import { catalogueItem, type FirstSeen } from './item';

/** GET /v1/catalog. `generatedAt` is when this process built it from the config: the data is that old, not older. */
export function mountCatalog(r: Router, registry: ModelRegistry, firstSeen?: FirstSeen, now: () => Date = () => new Date()): void {
  const send = cachedJson({ data: registry.all().map((m) => catalogueItem(m, firstSeen)), generatedAt: now().toISOString() });
  r.get('/v1/catalog', (_req, res) => send(res));
}
