import { execFileSync } from 'node:child_process';

/** Shared by the integration tests only; lives in src so the type-check covers it. */
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
