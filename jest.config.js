// Jest runs in its native ESM mode (npm test passes --experimental-vm-modules): the project is ESM and
// http-proxy-middleware 4 ships ESM only, so nothing is down-levelled to CommonJS. @swc/jest strips types.
const base = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } },
    ],
  },
};

/**
 * The proofs that break something on purpose (kill or pause Redis, fill a disk, SIGKILL or SIGTERM a
 * replica under load, fork workers) or count exactly over many processes: minutes between them, so
 * `npm run test:faults` runs them apart from the everyday suite. README "Tests" lists them.
 */
const faults = [
  'tests/e2e/billing-export-exactly-once.test.ts',
  'tests/e2e/concurrency-replica-death.test.ts',
  'tests/e2e/embedded-crash.test.ts',
  'tests/e2e/failure-log-exactly-once.test.ts',
  'tests/e2e/full-disk-start.test.ts',
  'tests/e2e/full-disk.test.ts',
  'tests/e2e/limits-through-faults.test.ts',
  'tests/e2e/outage.test.ts',
  'tests/e2e/replicas-figures.test.ts',
  'tests/e2e/shutdown-stdout.test.ts',
  'tests/e2e/shutdown.test.ts',
  'tests/e2e/usage-exactly-once.test.ts',
  'tests/e2e/visitor-limits-through-faults.test.ts',
  'tests/e2e/webhooks-redis-hang.test.ts',
  'tests/e2e/workers.test.ts',
].map((file) => `<rootDir>/${file}`);
const escaped = (path) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** @type {import('jest').Config} */
export default {
  // unit + integration are `npm test`; e2e, browser and faults run the built server (npm run test:all).
  projects: [
    {
      ...base,
      displayName: 'unit',
      // Tests beside what they test (src/**/*.test.ts: a management operation's statuses next to it).
      testMatch: ['<rootDir>/tests/unit/**/*.test.ts', '<rootDir>/src/**/*.test.ts'],
    },
    {
      ...base,
      displayName: 'integration',
      // In process against real Postgres and Redis; tests/security's in-process suites belong here.
      testMatch: ['<rootDir>/tests/integration/**/*.test.ts', '<rootDir>/tests/security/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', '\\.e2e\\.test\\.ts$'],
    },
    {
      ...base,
      displayName: 'e2e',
      // The built server as child processes (tests/e2e/helpers/tollgate.ts).
      testMatch: ['<rootDir>/tests/e2e/**/*.test.ts', '<rootDir>/tests/security/*.e2e.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...faults.map(escaped)],
    },
    { ...base, displayName: 'faults', testMatch: faults },
    {
      ...base,
      displayName: 'browser',
      testMatch: ['<rootDir>/tests/browser/**/*.test.ts'],
      // One Chromium for the run, each file connecting to it (tests/browser/global-setup.ts).
      globalSetup: '<rootDir>/tests/browser/global-setup.ts',
      globalTeardown: '<rootDir>/tests/browser/global-teardown.ts',
    },
  ],
  // Longest files first, from tests/durations.json where Jest's cache has no figure (a fresh clone).
  testSequencer: '<rootDir>/tests/sequencer.js',
  // Generous: e2e files start several servers, and the upgrade tests run PGlite's initdb (seconds of
  // CPU here); a hang still fails, it just takes this long. (A run-wide option: in a project it is ignored.)
  testTimeout: 120_000,
  globalSetup: '<rootDir>/tests/global-setup.ts',
  globalTeardown: '<rootDir>/tests/global-teardown.ts',
  // Integration and e2e files own their databases and ports. Five workers on a 2-core machine: with
  // four the CPUs still idled about an eighth of a run, while the fault proofs waited out Redis pauses
  // and restarts; six shared a slow machine so thinly that tests bounded in time (a change on every
  // replica within 1 s, a probe answered within 10 s) failed (docs/performance.md "Suite" has each
  // count's times).
  maxWorkers: 5,
  // A worker whose heap holds more than this after a file is replaced: the modules each file loads
  // stay behind, and workers grown past a gigabyte spent their CPU collecting it.
  workerIdleMemoryLimit: '512MB',
  watchman: false,
};
