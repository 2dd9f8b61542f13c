import type { BusEvent } from './port';

export interface BusErrorContext {
  adapter: 'memory' | 'redis' | 'kafka';
  /** What became of the event: an operator needs to know whether anything was lost. */
  action: 'dropped' | 'dead-lettered' | 'will-retry' | 'refused' | 'none';
  topic?: string;
  group?: string;
  event?: BusEvent;
  /** Counted, but not worth a log line of its own (a retry of an event whose failure was already logged). */
  quiet?: boolean;
}

/** Errors the bus cannot hand back to a caller because they happen in background delivery loops. */
export type BusErrorHandler = (err: unknown, ctx: BusErrorContext) => void;

/** Never silent by default: a dropped billing event must leave a trace even when nobody wired a logger. */
export const logBusError: BusErrorHandler = (err, ctx) => {
  if (ctx.quiet) return;
  const where = [ctx.group && `group=${ctx.group}`, ctx.topic && `topic=${ctx.topic}`, ctx.event && `event=${ctx.event.id}`]
    .filter(Boolean)
    .join(' ');
  // A dropped event's line is its record: the whole event, for an operator to apply by hand.
  const record = ctx.action === 'dropped' && ctx.event ? ` record=${JSON.stringify(ctx.event)}` : '';
  console.error(`[bus:${ctx.adapter}] ${ctx.action}: ${errorMessage(err)} ${where}${record}`.trimEnd());
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
