import type { Logger } from '@gateway/service-kit';

/**
 * The holds this process placed and has yet to close itself. A drain that reaches its deadline cuts the connections
 * still open; their requests then close their holds a moment later (a cut stream is charged what it delivered,
 * after counting it), and that close must find the bus still open. So a stopping process waits for this set to
 * empty, within the part of its grace period kept for it, before it closes the bus.
 */
export class OpenHolds {
  private readonly open = new Set<string>();
  private emptied: (() => void)[] = [];

  get size(): number {
    return this.open.size;
  }

  add(holdId: string): void {
    this.open.add(holdId);
  }

  /** Closed, or handed to something that outlives the request and closes it later (a job). */
  delete(holdId: string): void {
    if (this.open.delete(holdId) && this.open.size === 0) for (const resolve of this.emptied.splice(0)) resolve();
  }

  /** Resolves once none is open or `ms` have passed, with how many are still open. */
  async settled(ms: number): Promise<number> {
    if (this.open.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.emptied.push(resolve);
        timer = setTimeout(resolve, ms);
      });
      clearTimeout(timer);
    }
    return this.open.size;
  }
}

/**
 * Of a drain's time (DRAIN_TIMEOUT_MS), 3 s before the close reserve (service-kit's CLOSE_RESERVE_MS) are for the
 * holds of the requests it cuts: a stream cut there is charged what it delivered, and that close is published
 * before the bus closes.
 */
export const HOLD_CLOSE_RESERVE_MS = 3_000;

/** Waits, up to `ms`, for this process's open holds to close; what is left expires uncharged, and says so. */
export async function closeHoldsBeforeBus(openHolds: OpenHolds, logger: Logger, ms: number): Promise<void> {
  const left = await openHolds.settled(ms);
  if (left > 0) logger.warn({ holds: left }, 'stopping with holds still open: they expire at their deadline, uncharged');
}
