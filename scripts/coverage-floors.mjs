#!/usr/bin/env node
// The coverage of each package, as the floors in scripts/jest/coverage-floors.json measure it, beside its floor; with
// --write, raises each floor to the multiple of 5 % below what was measured less a point (never lowers one: a floor is
// lowered by hand, in a commit that says why). Reads the json-summary of the last run with coverage:
//   pnpm test   (or: npx jest --selectProjects unit pglite --coverage)
//   node scripts/coverage-floors.mjs [--write] [coverage/coverage-summary.json]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const write = args.includes('--write');
const summaryFile = path.resolve(args.find((a) => !a.startsWith('--')) ?? path.join(root, 'coverage', 'coverage-summary.json'));
const floorsFile = path.join(root, 'scripts', 'jest', 'coverage-floors.json');
const metrics = ['statements', 'branches', 'functions', 'lines'];

const summary = JSON.parse(fs.readFileSync(summaryFile, 'utf8'));
const floors = JSON.parse(fs.readFileSync(floorsFile, 'utf8'));

// Summed over the package's files, as jest sums a path key of coverageThreshold.
const measured = {};
for (const [file, counts] of Object.entries(summary)) {
  if (file === 'total') continue;
  const name = Object.keys(floors).find((p) => file.startsWith(path.join(root, p) + path.sep));
  if (!name) continue;
  measured[name] ??= Object.fromEntries(metrics.map((m) => [m, { covered: 0, total: 0 }]));
  for (const m of metrics) {
    measured[name][m].covered += counts[m].covered;
    measured[name][m].total += counts[m].total;
  }
}
// As istanbul computes it (two decimals; nothing to cover is 100 %), so the figure compared here is jest's.
const pct = ({ covered, total }) => (total === 0 ? 100 : Math.floor((10000 * covered) / total) / 100);
// The multiple of 5 below the measure less a point: a drop fails, while the point absorbs what varies from run to run
// (libs/spend's branches have measured 60.08 % and 60.52 % on the same tree: which retry path a race takes).
const floorOf = (p) => Math.max(0, Math.floor((p - 1) / 5) * 5);

let failing = 0;
const rows = [];
for (const name of Object.keys(floors)) {
  const m = measured[name];
  const cells = metrics.map((metric) => {
    const now = m ? pct(m[metric]) : 0;
    const floor = floors[name][metric];
    if (now < floor) failing++;
    if (write) floors[name][metric] = Math.max(floor, floorOf(now));
    return `${now.toFixed(2).padStart(6)} (${String(floor).padStart(3)})`;
  });
  rows.push(`${name.padEnd(22)} ${cells.join('  ')}`);
}
process.stdout.write(`${'package'.padEnd(22)} ${metrics.map((m) => m.padEnd(14)).join('  ')}\n${rows.join('\n')}\n`);
process.stdout.write('measured % (floor %)\n');
if (failing > 0) process.stdout.write(`${failing} figures are below their floor\n`);
if (write) {
  fs.writeFileSync(floorsFile, `${JSON.stringify(floors, null, 2)}\n`);
  process.stdout.write(`floors raised in ${path.relative(root, floorsFile)}\n`);
}
