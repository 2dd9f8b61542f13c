import type { Lifecycle } from './lifecycle';
import type { Logger } from './logger';

/** Parts that have started: the later phases of their lifecycle. */
export interface StartedParts {
  listening(url: string): void;
  /** Every part's readiness, in order; the first to throw is the answer. */
  ready(): Promise<void>;
  preClose(): void;
  /**
   * Every drain in reverse order, then every close in reverse order. A step that throws is logged and the rest still
   * run, so one failure does not leave the others' databases open; the first error is thrown once all have run.
   */
  stop(): Promise<void>;
}

/**
 * Starts `parts` in the order given (a host lists what it opened first, then its services inStartOrder). A start
 * that throws stops the parts started before it, in reverse, and is thrown again.
 */
export async function startParts(parts: readonly Lifecycle[], logger: Logger): Promise<StartedParts> {
  const started: Lifecycle[] = [];
  for (const part of parts) {
    try {
      await part.start?.();
    } catch (err) {
      logger.error({ err, part: part.name }, 'start failed: stopping what had started');
      await stopParts(started, logger).catch(() => undefined);
      throw err;
    }
    started.push(part);
  }
  return {
    listening: (url) => {
      for (const part of started) part.listening?.(url);
    },
    async ready() {
      for (const part of started) await part.ready?.();
    },
    preClose: () => {
      for (const part of [...started].reverse()) part.preClose?.();
    },
    stop: () => stopParts(started, logger),
  };
}

async function stopParts(parts: readonly Lifecycle[], logger: Logger): Promise<void> {
  const reversed = [...parts].reverse();
  const failures: unknown[] = [];
  for (const phase of ['drain', 'close'] as const) {
    for (const part of reversed) {
      try {
        await part[phase]?.();
      } catch (err) {
        logger.error({ err, part: part.name, phase }, 'stop step failed; stopping the rest');
        failures.push(err);
      }
    }
  }
  if (failures.length > 0) throw failures[0];
}
