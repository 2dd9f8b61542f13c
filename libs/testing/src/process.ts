import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

/** The repository's root: entries are named relative to it, and started with it as the working directory. */
export const REPO_ROOT = path.resolve(__dirname, '../../..');

export interface RunningProcess {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr interleaved. */
  output(): string;
  exited: Promise<number | null>;
}

/**
 * Starts an entry point of the repository: a TypeScript source with tsx's loader (GATEWAY_FROM_SOURCE's way), or a
 * bundle of dist/ (`dist/<name>.cjs`, built by scripts/build.js) as the package scripts and containers run it; with
 * the operator's variables cleared unless `env` sets them, so the machine's own environment cannot leak in.
 * `detached` puts it in its own process group, so a test can signal it and every child it starts at once.
 */
export function runEntry(entry: string, env: Record<string, string>, opts: { detached?: boolean } = {}): RunningProcess {
  const file = path.join(REPO_ROOT, entry);
  const args = entry.endsWith('.cjs') ? ['--enable-source-maps', file] : ['--import', 'tsx', file];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    detached: opts.detached ?? false,
    env: {
      ...process.env,
      DATABASE_URL: '',
      REDIS_URL: '',
      BUS: '',
      KAFKA_BROKERS: '',
      GATEWAY_CONFIG: '',
      GATEWAY_DEMO_CATALOGUE: '',
      GATEWAY_ADMIN_TOKEN: '',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output: () => out, exited };
}
