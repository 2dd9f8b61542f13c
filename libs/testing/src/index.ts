/** Helpers shared by the test suites only (never imported by product code). */
import { execFileSync } from 'node:child_process';

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** In CI a missing Redis is a broken pipeline, so the suites run and fail instead of skipping. */
export const IN_CI = !['', '0', 'false'].includes((process.env.CI ?? '').trim().toLowerCase());

/**
 * Synchronous because jest decides between describe and describe.skip while collecting tests, before any
 * async hook can run. A TCP connect is enough: a wrong server answers the first command with an error.
 */
export function redisReachable(url = REDIS_URL): boolean {
  const { hostname, port } = new URL(url);
  const probe = `require('net').connect(${Number(port) || 6379}, ${JSON.stringify(hostname.replace(/^\[|\]$/g, '') || '127.0.0.1')})
    .on('connect', () => process.exit(0)).on('error', () => process.exit(1)); setTimeout(() => process.exit(1), 1500);`;
  try {
    execFileSync(process.execPath, ['-e', probe], { stdio: 'ignore', timeout: 3_000 });
    return true;
  } catch {
    return false;
  }
}

export const REDIS_ENABLED = IN_CI || redisReachable();

/** Polls `check` until it holds, failing with what was awaited. */
export async function waitFor(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Fails the suite with the reason instead of letting every test time out against an absent server. */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
