/** Exponential, capped; jitter spreads the retries of consumers that failed together (e.g. on a DB blip). */
export function backoffMs(attempt: number, baseMs: number, capMs = 5_000): number {
  const exp = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp / 2 + Math.random() * (exp / 2));
}

/** Unref'd so a pending retry never keeps a process alive on shutdown. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** A wait that `end()` cuts short; `onEnd` runs once, when it ends either way. */
export interface EndableWait {
  done: Promise<void>;
  end(): void;
}

/**
 * What a consumer waits after a thin read before reading again: ended at once by its stop, so a closing
 * subscription is not held up by a wait that only gathers events.
 */
export function endableWait(ms: number, onEnd?: () => void): EndableWait {
  let end = () => {};
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(() => end(), ms);
    end = () => {
      clearTimeout(timer);
      end = () => {};
      onEnd?.();
      resolve();
    };
  });
  return { done, end: () => end() };
}

/** Waits for the promises to settle, but never longer than `ms`: shutdown must not hang on a stuck handler. */
export async function settleWithin(promises: Promise<unknown>[], ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([Promise.allSettled(promises).then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
