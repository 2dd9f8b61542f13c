export { createCatalogueService, type CatalogueService, type CatalogueState } from './service';
export { openCatalogue, type CatalogueDeps, type OpenCatalogue } from './open';
export { migrations } from './migrations';
export { catalogueService } from './gateway-service';
export { redisPing } from './status/redis-ping';
export { STATUS_PROBE_AGENT } from './status/checks';
