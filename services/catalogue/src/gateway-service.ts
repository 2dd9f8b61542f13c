import type { GatewayService } from '@gateway/service-kit';
import type { OpenCatalogue } from './open';

/**
 * The catalogue in the one lifecycle: its consumers subscribe at start (before billing's, which announces every
 * account: the table's startsAfter), and the status monitor samples once the listener answers (its api check calls it).
 */
export function catalogueService(catalogue: OpenCatalogue): GatewayService {
  return {
    name: 'catalogue',
    routers: { public: catalogue.service.router },
    start: catalogue.subscribe,
    listening: () => catalogue.startMonitor(),
    close: catalogue.close,
  };
}
