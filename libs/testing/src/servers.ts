import { execFileSync } from 'node:child_process';

/** Any CI=… other than empty, 0 or false: CI providers set it to "true", some to "1". */
export const IN_CI = !['', '0', 'false'].includes((process.env.CI ?? '').trim().toLowerCase());

export interface ServerNeed {
  /** Why suites needing the server do not run here; undefined when they run. */
  skipReason(): string | undefined;
  /** `describe` when the suites run; otherwise `describe.skip`, with the reason in the title and on stderr. */
  describe(title: string, fn: () => void): void;
}

/**
 * The one rule for suites that need a real server: under CI=true an absent server is a failure, never a skip (the
 * suite runs and its first connection fails with the reason); on a developer machine a suite whose server is
 * absent is listed as skipped, with the reason.
 */
export function needServer(name: string, url: string, defaultPort: number): ServerNeed {
  let reason: string | undefined | null = null; // null: not probed yet; probing costs a child process
  const skipReason = () => {
    if (reason === null) {
      reason = IN_CI || reachable(url, defaultPort) ? undefined : `${name} unreachable at ${url}; outside CI that is a skip, under CI=true a failure`;
    }
    return reason;
  };
  return {
    skipReason,
    describe: (title, fn) => describeOrSkip(title, skipReason(), fn),
  };
}

/** `describe`, or, given a reason, `describe.skip` with the reason in the title and on stderr. */
export function describeOrSkip(title: string, skipReason: string | undefined, fn: () => void): void {
  if (!skipReason) {
    describe(title, fn);
    return;
  }
  // Jest prints nothing for a file whose tests are all skipped, not even its console output; stderr gets through.
  process.stderr.write(`skipped "${title}": ${skipReason}\n`);
  describe.skip(`${title} [skipped: ${skipReason}]`, fn);
}

/**
 * Synchronous because jest decides between describe and describe.skip while collecting tests, before any async
 * hook can run. A TCP connect is enough: a wrong server answers the suite's first command with an error.
 */
function reachable(url: string, defaultPort: number): boolean {
  const { hostname, port } = new URL(url);
  const host = hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  const probe = `require('net').connect(${Number(port) || defaultPort}, ${JSON.stringify(host)})
    .on('connect', () => process.exit(0)).on('error', () => process.exit(1)); setTimeout(() => process.exit(1), 1500);`;
  try {
    execFileSync(process.execPath, ['-e', probe], { stdio: 'ignore', timeout: 3_000 });
    return true;
  } catch {
    return false;
  }
}
