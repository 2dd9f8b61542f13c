/**
 * Projects: unit (no servers, milliseconds a suite), pglite (embedded PostgreSQL in the test process: no server, but
 * a WebAssembly database booted per suite, seconds each), integration (real PostgreSQL, Redis and Kafka), e2e (whole
 * gateway, both run modes).
 */
// ignoreDynamic keeps import() as import(): ESM-only packages (music-metadata) load that way, as they do under tsx;
// turned into require(), jest could not load them. Needs --experimental-vm-modules, which the test script sets.
const transform = {
  '^.+\\.(t|j)s$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs', ignoreDynamic: true } }],
};
const common = { transform, testEnvironment: 'node', moduleFileExtensions: ['ts', 'js', 'json'] };
// Coverage is measured on the unit and pglite projects only, when jest runs with --coverage (scripts/test.mjs).
const { notMeasured, ...coverage } = require('./scripts/jest/coverage.js');
module.exports = {
  ...coverage,
  projects: [
    {
      ...common,
      displayName: 'unit',
      setupFilesAfterEnv: ['<rootDir>/scripts/jest/timeout-unit.js'],
      testMatch: [
        '<rootDir>/libs/*/src/**/*.test.ts',
        '<rootDir>/services/*/src/**/*.test.ts',
        '<rootDir>/scripts/**/*.test.ts',
        '<rootDir>/bench/*.test.ts',
      ],
      testPathIgnorePatterns: ['/node_modules/', '\\.pglite\\.test\\.ts$'],
    },
    {
      ...common,
      displayName: 'pglite',
      setupFilesAfterEnv: ['<rootDir>/scripts/jest/timeout-integration.js'],
      testMatch: ['<rootDir>/libs/*/src/**/*.pglite.test.ts', '<rootDir>/services/*/src/**/*.pglite.test.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      coveragePathIgnorePatterns: notMeasured,
      setupFilesAfterEnv: ['<rootDir>/scripts/jest/timeout-integration.js'],
      testMatch: ['<rootDir>/libs/*/src/**/*.itest.ts', '<rootDir>/services/*/src/**/*.itest.ts', '<rootDir>/test-e2e/**/*.itest.ts'],
    },
    {
      ...common,
      displayName: 'e2e',
      coveragePathIgnorePatterns: notMeasured,
      setupFilesAfterEnv: ['<rootDir>/scripts/jest/timeout-e2e.js'],
      testMatch: ['<rootDir>/test-e2e/**/*.e2e.ts'],
    },
  ],
};
