#!/usr/bin/env node
// `pnpm test`: lint and format check, package boundaries and import cycles (scripts/check-imports.ts), type-check,
// then every jest project (unit and pglite, with a coverage floor per package; integration on real PostgreSQL and
// Redis; e2e on both run modes), then the operator-contract smoke test in both run modes when ../shared/tools is
// beside the checkout.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
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
run('package boundaries and import cycles', process.execPath, ['--import', 'tsx', path.join(root, 'scripts', 'check-imports.ts')]);
run('typecheck', bin('tsc'), ['-p', 'tsconfig.json', '--noEmit']);
// PGlite loads its WebAssembly through dynamic import(), which jest's module VM only allows with this flag.
const nodeOptions = [process.env.NODE_OPTIONS, '--experimental-vm-modules', '--no-warnings=ExperimentalWarning'].filter(Boolean).join(' ');
// The webhook suites deliver to an HTTPS receiver with the committed self-signed certificate; Node trusts extra CAs
// only from this variable, read at process start, so it is set here rather than inside a test. It names one file:
// a bundle the caller already trusts this way is kept, with the test certificate appended in a copy.
let testCa = path.join(root, 'test-e2e', 'support', 'tls', 'localhost.crt');
const callerCa = process.env.NODE_EXTRA_CA_CERTS;
if (callerCa && fs.existsSync(callerCa) && path.resolve(callerCa) !== testCa) {
  const bundle = path.join(os.tmpdir(), `gateway-test-ca-${process.pid}.pem`);
  fs.writeFileSync(bundle, `${fs.readFileSync(callerCa, 'utf8').trimEnd()}\n${fs.readFileSync(testCa, 'utf8')}`);
  process.on('exit', () => fs.rmSync(bundle, { force: true }));
  testCa = bundle;
}
// The whole run measures the unit and pglite projects' coverage as it goes (one pass over the tests; jest.config.js
// leaves the other projects uninstrumented) and fails below a package's floor (docs/testing.md). A run narrowed by
// arguments skips it: a subset of the tests would fall below every floor.
const args = process.argv.slice(2);
const coverage = args.length === 0 ? ['--coverage'] : [];
run('jest', bin('jest'), ['--maxWorkers=2', ...coverage, ...args], { NODE_OPTIONS: nodeOptions, NODE_EXTRA_CA_CERTS: testCa });
const smoke = path.resolve(root, '..', 'shared', 'tools', 'contract-smoke.mjs');
if (fs.existsSync(smoke)) {
  run('operator contract smoke (pnpm start)', process.execPath, [smoke, root]);
  run('operator contract smoke (pnpm fleet)', process.execPath, [smoke, root, '--fleet']);
} else process.stdout.write('\n(operator contract smoke skipped: ../shared/tools/contract-smoke.mjs is not beside this checkout)\n');
