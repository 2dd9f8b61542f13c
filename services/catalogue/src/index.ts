import { Router } from 'express';
import type { ModelRegistry } from '@gateway/config';
import { mountCatalog } from './catalog/routes';
import { mountModels } from './models/routes';

export interface CatalogueService {
  /** Public routes: no key needed. */
  router: Router;
}

export function createCatalogueService(registry: ModelRegistry): CatalogueService {
  const router = Router();
  mountModels(router, registry);
  mountCatalog(router, registry);
  return { router };
}
