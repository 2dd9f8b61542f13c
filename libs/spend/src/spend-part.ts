import type { Lifecycle, Logger } from '@gateway/service-kit';
import { HOLD_CLOSE_RESERVE_MS, type OpenHolds, closeHoldsBeforeBus } from './open-holds';

/**
 * What a process that spends money adds to its lifecycle, listed after its services so it drains before them: the
 * requests' holds close (their settles go out over the bus, which closes later), and the health reporter stops.
 */
export function spendPart(deps: { openHolds: OpenHolds; logger: Logger; startHealth?: () => { stop(): void } | undefined }): Lifecycle {
  let health: { stop(): void } | undefined;
  return {
    name: 'spend',
    // The status monitor's view of the providers: what this process's traffic saw, once per sample interval.
    start: () => {
      health = deps.startHealth?.();
    },
    async drain() {
      await closeHoldsBeforeBus(deps.openHolds, deps.logger, HOLD_CLOSE_RESERVE_MS);
      health?.stop();
    },
  };
}
