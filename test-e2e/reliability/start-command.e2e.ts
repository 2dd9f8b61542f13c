import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitFor, REPO_ROOT as ROOT } from '@gateway/testing';
import { freePort } from '../support/child-gateway';

/**
 * Issue 32 (stopping): the README's start command, signalled the way a terminal's `kill` or a supervisor signals it
 * (SIGTERM to pnpm's own pid, not to its process group), must drain the gateway and leave no process behind. pnpm
 * once exited 143 at once and the gateway, orphaned, kept serving.
 */

/** pnpm as this suite was started with (`pnpm test` names its own script), else the one on PATH. */
const pnpm = (): [string, string[]] => {
  const execPath = process.env.npm_execpath;
  return execPath && /pnpm/.test(execPath) ? [process.execPath, [execPath]] : ['pnpm', []];
};

/** Pids of live processes whose environment carries `marker`: what the start command left running. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(marker)) found.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

describe('the start command stops on SIGTERM', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-start-'));
  afterAll(() => {
    for (const pid of processesWith(`GATEWAY_DATA_DIR=${dir}`)) process.kill(pid, 'SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('pnpm start, sent SIGTERM on its own pid, drains the gateway, exits, and leaves no process behind', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const [cmd, args] = pnpm();
    const child = spawn(cmd, [...args, 'start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        METRICS_PORT: '0',
        GATEWAY_PUBLIC_URL: url,
        GATEWAY_DATA_DIR: dir,
        GATEWAY_CONFIG: '',
        DATABASE_URL: '',
        REDIS_URL: '',
        BUS: '',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    await waitFor(async () => (await fetch(`${url}/v1/models`).catch(() => undefined))?.ok === true, 'the gateway to answer', 90_000);
    expect(processesWith(`GATEWAY_DATA_DIR=${dir}`).length).toBeGreaterThan(1);

    child.kill('SIGTERM');
    const code = await exited;
    expect(out).toContain('drained');
    expect(code).toBe(0);
    await waitFor(async () => processesWith(`GATEWAY_DATA_DIR=${dir}`).length === 0, 'every process of the start command to end', 10_000);
    await expect(fetch(`${url}/v1/models`)).rejects.toThrow();
  }, 180_000);
});
