#!/usr/bin/env node
// `pnpm test`: lint and format check, type-check, then every jest project (unit, integration on real PostgreSQL and Redis, e2e on both
// run modes), then the operator-contract smoke test in both run modes when ../shared/tools is beside the checkout.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const run = (label, cmd, args, env = {}) => {
  process.stdout.write(`\n=== ${label}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) {
    process.stdout.write(`\n${label} failed (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status || 1);
  }
};

if (!fs.existsSync(bin('jest'))) run('install', 'pnpm', ['install', '--frozen-lockfile']);
run('lint and format (biome)', bin('biome'), ['check', '.']);
run('typecheck', bin('tsc'), ['-p', 'tsconfig.json', '--noEmit']);
// PGlite loads its WebAssembly through dynamic import(), which jest's module VM only allows with this flag.
const nodeOptions = [process.env.NODE_OPTIONS, '--experimental-vm-modules', '--no-warnings=ExperimentalWarning'].filter(Boolean).join(' ');
run('jest', bin('jest'), ['--maxWorkers=2', ...process.argv.slice(2)], { NODE_OPTIONS: nodeOptions });
const smoke = path.resolve(root, '..', 'shared', 'tools', 'contract-smoke.mjs');
if (fs.existsSync(smoke)) {
  run('operator contract smoke (pnpm start)', process.execPath, [smoke, root]);
  run('operator contract smoke (pnpm fleet)', process.execPath, [smoke, root, '--fleet']);
} else process.stdout.write('\n(operator contract smoke skipped: ../shared/tools/contract-smoke.mjs is not beside this checkout)\n');
