import { Router } from 'express';
import type { ModelRegistry } from '@gateway/config';
import { mountModels } from './models/routes';

export interface CatalogueService {
  /** Public routes: no key needed. */
  router: Router;
}

export function createCatalogueService(registry: ModelRegistry): CatalogueService {
  const router = Router();
  mountModels(router, registry);
  return { router };
}
