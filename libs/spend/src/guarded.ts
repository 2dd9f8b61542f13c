import { GatewayError } from '@gateway/errors';

/** Anything holding money for a request: a PaidCall, or a HoldCloser working from a record. */
export interface Releasable {
  release(errorCode: string): Promise<void>;
}

/** Runs `fn`; anything that escapes it releases the hold (a no-op once the hold is settled), then propagates. */
export async function guarded<T>(hold: Releasable, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    await hold.release(e instanceof GatewayError ? e.code : 'upstream_unavailable');
    throw e;
  }
}
