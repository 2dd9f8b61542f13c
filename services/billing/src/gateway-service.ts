import type { GatewayService } from '@gateway/service-kit';
import type { BillingService } from './service';

/**
 * Billing in the one lifecycle. It closes after the bus (the embedded gateway's bus delivers the settles still
 * queued while billing consumes them); `storageIsOwn` (embedded: one process on its own storage) makes its database
 * and bus part of its readiness, which in the fleet are shared dependencies watched in the background.
 */
export function billingService(billing: BillingService, opts: { storageIsOwn?: boolean } = {}): GatewayService {
  return {
    name: 'billing',
    routers: { public: billing.publicRouter, admin: billing.adminRouter, internal: billing.internalRouter },
    start: billing.start,
    async ready() {
      await billing.ready();
      if (opts.storageIsOwn) await billing.ping();
    },
    close: billing.stop,
  };
}
