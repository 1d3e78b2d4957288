// Jest runs in its native ESM mode (npm test passes --experimental-vm-modules): the project is ESM and
// http-proxy-middleware 4 ships ESM only, so nothing is down-levelled to CommonJS. @swc/jest strips types.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } },
    ],
  },
  // Tests beside what they test (src/**/*.test.ts: a management operation's statuses next to it) and the
  // suites under tests/.
  testMatch: ['<rootDir>/tests/**/*.test.ts', '<rootDir>/src/**/*.test.ts'],
  globalSetup: '<rootDir>/tests/global-setup.ts',
  globalTeardown: '<rootDir>/tests/global-teardown.ts',
  // Generous: e2e files start several servers, and the upgrade tests run PGlite's initdb (seconds of
  // CPU here); a hang still fails, it just takes this long.
  testTimeout: 120_000,
  // Integration and e2e files own their databases and ports; two workers fit this 2-core machine.
  maxWorkers: 2,
  watchman: false,
};
