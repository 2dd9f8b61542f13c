// Coverage of the unit and pglite projects, with a floor per package (coverage-floors.json). A floor is checked on the
// package as a whole (every file under its src/ summed), so a drop anywhere in it fails `pnpm test`. docs/testing.md
// says how the floors were set and how to raise them (scripts/coverage-floors.mjs).
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const floors = require('./coverage-floors.json');

const packages = ['libs', 'services'].flatMap((dir) =>
  fs
    .readdirSync(path.join(root, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(root, dir, entry.name, 'src')))
    .map((entry) => `${dir}/${entry.name}`),
);
// A package without a floor would go unchecked, and a floor without its package would name nothing: either is a
// mistake in coverage-floors.json, caught at configuration time rather than by a silent pass.
const missing = packages.filter((name) => !floors[name]);
const stale = Object.keys(floors).filter((name) => !packages.includes(name));
if (missing.length > 0 || stale.length > 0) {
  throw new Error(
    `scripts/jest/coverage-floors.json must name every package: missing ${missing.join(', ') || 'none'}; unknown ${stale.join(', ') || 'none'}`,
  );
}

module.exports = {
  // Every source file, loaded by a test or not (an untested file counts as 0 %), but the tests themselves.
  collectCoverageFrom: ['{libs,services}/*/src/**/*.ts', '!**/*.{test,itest}.ts', '!**/*.d.ts'],
  // babel's istanbul instrumentation added about 4 s to the unit project's 43 s; the v8 provider took 300 s.
  coverageProvider: 'babel',
  coverageReporters: ['text-summary', 'json-summary'],
  // Jest resolves a path key against the working directory, not rootDir; absolute keys hold from any directory. The
  // trailing separator keeps libs/bus from also matching a libs/bus-something.
  coverageThreshold: Object.fromEntries(packages.map((name) => [`${path.join(root, name)}${path.sep}`, floors[name]])),
  // Set on the integration and e2e projects: they run in the same jest invocation as the others (one pass over the
  // unit tests), but their servers and whole gateways are no part of the measure, and instrumenting what they load
  // would only slow them down.
  notMeasured: ['.*'],
};
