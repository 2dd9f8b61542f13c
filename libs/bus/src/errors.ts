import type { BusEvent } from './port';

export interface BusErrorContext {
  adapter: 'memory' | 'redis' | 'kafka';
  /** What became of the event: an operator needs to know whether anything was lost. */
  action: 'dropped' | 'dead-lettered' | 'will-retry' | 'refused' | 'none';
  topic?: string;
  group?: string;
  event?: BusEvent;
}

/** Errors the bus cannot hand back to a caller because they happen in background delivery loops. */
export type BusErrorHandler = (err: unknown, ctx: BusErrorContext) => void;

/** Never silent by default: a dropped billing event must leave a trace even when nobody wired a logger. */
export const logBusError: BusErrorHandler = (err, ctx) => {
  const where = [ctx.group && `group=${ctx.group}`, ctx.topic && `topic=${ctx.topic}`, ctx.event && `event=${ctx.event.id}`]
    .filter(Boolean)
    .join(' ');
  console.error(`[bus:${ctx.adapter}] ${ctx.action}: ${errorMessage(err)} ${where}`.trimEnd());
};

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Delivery loops call this from places where a throw would become an unhandled rejection and kill the process. */
export function guarded(handler: BusErrorHandler): BusErrorHandler {
  return (err, ctx) => {
    try {
      handler(err, ctx);
    } catch {
      // A broken logger must not take event delivery down with it.
    }
  };
}
