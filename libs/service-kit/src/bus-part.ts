import type { Lifecycle } from './lifecycle';

/** What the bus part needs of a process's event bus (@gateway/bus's port), named here so the kit depends on no bus. */
export interface ConsumingBus {
  /** Throws when a consumer of this process has stopped for good. */
  checkConsumers(): void;
  close(): Promise<void>;
}

/**
 * A process's event bus as one of its parts. Readiness fails while a consumer of this process has stopped for good:
 * nothing runs it again before a restart, so the pod is broken by itself. The bus being unreachable is a shared
 * dependency's outage (its ping, on /healthz), never this pod's readiness.
 *
 * `closeIn` is the stop phase it closes in. `drain`: once the parts after it have drained, before any part closes,
 * so no event is delivered to a consumer whose store is closing. `close`: after the parts after it have closed too,
 * delivering what their last steps published.
 */
export function busPart(bus: ConsumingBus, closeIn: 'drain' | 'close'): Lifecycle {
  const ready = async () => bus.checkConsumers();
  const close = () => bus.close();
  return closeIn === 'drain' ? { name: 'bus', drain: close, ready } : { name: 'bus', close, ready };
}
