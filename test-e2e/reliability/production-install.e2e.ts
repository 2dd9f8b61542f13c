import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EMBEDDED_COMMAND, migrateCommand } from '@gateway/topology';
import { waitFor, REPO_ROOT as ROOT } from '@gateway/testing';
import { freePort } from '../support/child-gateway';

/**
 * Issue 34, defect 10, as far as it can be checked without a Docker engine: the image's build stage, done here in a
 * clean copy of the repository. Production dependencies only (a service importing a dev dependency, or esbuild or
 * tsx moved back to them, fails here), bundled by scripts/build.js as the image's build stage does, small enough for
 * the 250 MB image, and the image's own commands start from those bundles.
 */

/** What deploy/Dockerfile's source stage removes before installing: the workspace packages the image leaves out. */
const LEFT_OUT = ['test-e2e', 'bench', 'deploy/helm', 'k8s', 'docs'];
/** What the build stage deletes after installing: nothing a process reads at run time. */
const PRUNED = /\.(map|d\.ts|d\.mts|d\.cts|md)$/;
/**
 * The image's budget (250 MB) less its base: Alpine (~8 MB), libstdc++ (~3 MB) and Node 22's binary (~115 MB),
 * rounded down. /app must fit in what is left.
 */
const APP_BUDGET_BYTES = 120 * 1024 * 1024;

const pnpm = (): [string, string[]] => {
  const execPath = process.env.npm_execpath;
  return execPath && /pnpm/.test(execPath) ? [process.execPath, [execPath]] : ['pnpm', []];
};

function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += sizeOf(full);
    else if (entry.isFile()) total += fs.statSync(full).size;
  }
  return total;
}

function prune(dir: string): void {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) prune(full);
    else if (entry.isFile() && PRUNED.test(entry.name)) fs.rmSync(full);
  }
}

describe('the production install the image is built from', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-prod-install-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  beforeAll(() => {
    // The committed sources, as the build context has them (no node_modules, no local data).
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
    for (const file of files) {
      if (LEFT_OUT.some((p) => file === p || file.startsWith(`${p}/`)) || !fs.existsSync(path.join(ROOT, file))) continue;
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
    }
    const [cmd, args] = pnpm();
    const install = spawnSync(cmd, [...args, 'install', '--frozen-lockfile', '--offline', '--prod'], {
      cwd: dir,
      env: { ...process.env, CI: 'true' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (install.status !== 0) throw new Error(`pnpm install --prod failed:\n${install.stdout}\n${install.stderr}`);
    // The image's commands run the bundles its build stage makes from the production install alone.
    const build = spawnSync(process.execPath, ['scripts/build.js'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    if (build.status !== 0) throw new Error(`node scripts/build.js failed:\n${build.stdout}\n${build.stderr}`);
    prune(path.join(dir, 'node_modules', '.pnpm'));
  }, 180_000);

  it('holds no dev dependency, and fits the image budget', () => {
    const installed = fs.readdirSync(path.join(dir, 'node_modules', '.pnpm'));
    for (const dev of ['typescript@', '@biomejs+biome@', '@swc+core@', 'jest@', 'fast-check@', 'autocannon@'])
      expect({ dev, installed: installed.some((p) => p.startsWith(dev)) }).toEqual({ dev, installed: false });
    expect(fs.existsSync(path.join(dir, 'node_modules', 'tsx', 'package.json'))).toBe(true);
    const bytes = sizeOf(dir);
    process.stdout.write(`production install: ${(bytes / 1024 / 1024).toFixed(1)} MB (budget ${APP_BUDGET_BYTES / 1024 / 1024} MB)\n`);
    expect(bytes).toBeLessThanOrEqual(APP_BUDGET_BYTES);
  });

  it("the migrate command loads every service's migrations from it", () => {
    const [, ...args] = migrateCommand('no-such-service');
    const run = spawnSync(process.execPath, args, { cwd: dir, env: { ...process.env, DATABASE_URL: '' }, encoding: 'utf8', timeout: 60_000 });
    expect({ code: run.status, err: run.stderr }).toEqual({
      code: 2,
      err: 'migrate: no service named no-such-service; the services with migrations: billing, media, jobs, catalogue, mcp\n',
    });
  });

  it("the image's default command starts the embedded gateway from it, and SIGTERM drains it", async () => {
    const port = await freePort();
    const data = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-prod-data-'));
    const [, ...args] = EMBEDDED_COMMAND;
    const child = spawn(process.execPath, args, {
      cwd: dir,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        PORT: String(port),
        HOST: '127.0.0.1',
        METRICS_PORT: '0',
        GATEWAY_DATA_DIR: data,
        GATEWAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
        GATEWAY_CONFIG: '',
        DATABASE_URL: '',
        REDIS_URL: '',
        BUS: '',
        LOG_LEVEL: 'info',
        DRAIN_TIMEOUT_MS: '7000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${port}/v1/models`).catch(() => undefined))?.ok === true,
        'the gateway to answer',
        90_000,
      );
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      // On the drain time it was given (the image's embedded gateway reads DRAIN_TIMEOUT_MS too).
      expect(out).toMatch(/"graceMs":7000,"cutAfterMs":2000,"msg":"draining"[\s\S]*"msg":"drained"/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      fs.rmSync(data, { recursive: true, force: true });
    }
  }, 120_000);
});
