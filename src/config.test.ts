import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config.js';

const file = () => join(mkdtempSync(join(tmpdir(), 'tg-clock-')), 'offset-ms');

describe('TEST_CLOCK_FILE (src/ops/test-clock.ts)', () => {
  it('is refused in production with a line that names the variable', () => {
    const env = { NODE_ENV: 'production', ROOT_TOKEN: 'r'.repeat(40), TEST_CLOCK_FILE: file() };
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(
      'TEST_CLOCK_FILE: a test clock is refused when NODE_ENV=production: unset it',
    );
    expect(loadConfig({ ...env, TEST_CLOCK_FILE: '' }).testClockFile).toBeUndefined();
    expect(loadConfig({ TEST_CLOCK_FILE: env.TEST_CLOCK_FILE }).testClockFile).toBe(env.TEST_CLOCK_FILE);
  });
});

describe('KEY_PREFIX, LEAKED_KEY_ACTION, GITHUB_SECRET_SCANNING_KEYS_URL (docs/guides/leaked-keys.md)', () => {
  it('takes the defaults, or settings of the documented shape', () => {
    expect(loadConfig({}).leaks).toEqual({
      keyPrefix: 'tg_',
      action: 'disable',
      githubKeysUrl: new URL('https://api.github.com/meta/public_keys/secret_scanning'),
    });
    const set = loadConfig({
      KEY_PREFIX: 'acme_live_',
      LEAKED_KEY_ACTION: 'roll',
      GITHUB_SECRET_SCANNING_KEYS_URL: 'http://127.0.0.1:9000/keys',
    }).leaks;
    expect(set).toEqual({
      keyPrefix: 'acme_live_',
      action: 'roll',
      githubKeysUrl: new URL('http://127.0.0.1:9000/keys'),
    });
  });

  it.each([
    [{ KEY_PREFIX: 'acme' }, 'KEY_PREFIX: must be 2 to 16 of a-z, 0-9 and _, ending in _ (e.g. acme_live_)'],
    [{ KEY_PREFIX: 'Acme_' }, 'KEY_PREFIX: must be 2 to 16'],
    [{ KEY_PREFIX: 'a_very_long_prefix_' }, 'KEY_PREFIX: must be 2 to 16'],
    [{ LEAKED_KEY_ACTION: 'delete' }, 'LEAKED_KEY_ACTION: must be disable, roll or notify, got "delete"'],
    [
      { GITHUB_SECRET_SCANNING_KEYS_URL: 'ftp://example.com/keys' },
      'GITHUB_SECRET_SCANNING_KEYS_URL: must use',
    ],
  ])('refuses %j with a line that names the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe('REDIS_COMMAND_TIMEOUT_MS (docs/guides/operations.md)', () => {
  it('is 500 ms unless set, and refuses anything but a whole number from 10 to 60000 by name', () => {
    expect(loadConfig({}).redisCommandTimeoutMs).toBe(500);
    expect(loadConfig({ REDIS_COMMAND_TIMEOUT_MS: '2000' }).redisCommandTimeoutMs).toBe(2_000);
    expect(() => loadConfig({ REDIS_COMMAND_TIMEOUT_MS: '0.5' })).toThrow(
      'REDIS_COMMAND_TIMEOUT_MS: must be a whole number, got "0.5"',
    );
    expect(() => loadConfig({ REDIS_COMMAND_TIMEOUT_MS: '5' })).toThrow(
      'REDIS_COMMAND_TIMEOUT_MS: must be between 10 and 60000, got 5',
    );
  });
});

describe('DATABASE_CONNECT_TIMEOUT_MS and DATABASE_QUERY_TIMEOUT_MS (docs/guides/operations.md)', () => {
  it('are 2 s and 5 s unless set, and refuse anything but a whole number in their range by name', () => {
    expect(loadConfig({}).databaseTimeouts).toEqual({ connectMs: 2_000, queryMs: 5_000 });
    const set = { DATABASE_CONNECT_TIMEOUT_MS: '10000', DATABASE_QUERY_TIMEOUT_MS: '600000' };
    expect(loadConfig(set).databaseTimeouts).toEqual({ connectMs: 10_000, queryMs: 600_000 });
    expect(() => loadConfig({ DATABASE_CONNECT_TIMEOUT_MS: '2s' })).toThrow(
      'DATABASE_CONNECT_TIMEOUT_MS: must be a whole number, got "2s"',
    );
    expect(() => loadConfig({ DATABASE_CONNECT_TIMEOUT_MS: '99' })).toThrow(
      'DATABASE_CONNECT_TIMEOUT_MS: must be between 100 and 60000, got 99',
    );
    expect(() => loadConfig({ DATABASE_QUERY_TIMEOUT_MS: '3600001' })).toThrow(
      'DATABASE_QUERY_TIMEOUT_MS: must be between 100 and 3600000, got 3600001',
    );
  });
});

describe('PORTAL_REFERENCE_ALLOW_HTTP and PORTAL_REFERENCE_ALLOW_PRIVATE', () => {
  it('are off unless set to true, and refuse anything but true or false by name', () => {
    expect(loadConfig({}).portalReference).toEqual({ allowHttp: false, allowPrivate: false });
    expect(
      loadConfig({ PORTAL_REFERENCE_ALLOW_HTTP: 'true', PORTAL_REFERENCE_ALLOW_PRIVATE: 'false' })
        .portalReference,
    ).toEqual({ allowHttp: true, allowPrivate: false });
    expect(() => loadConfig({ PORTAL_REFERENCE_ALLOW_PRIVATE: 'yes' })).toThrow(
      'PORTAL_REFERENCE_ALLOW_PRIVATE: must be "true" or "false", got "yes"',
    );
  });
});

describe('EXTAUTH_* (docs/guides/external-authorization.md)', () => {
  it('leaves both listeners off by default, takes ports and settings of the documented shape, and refuses others by name', () => {
    expect(loadConfig({}).extauth).toEqual({
      port: undefined,
      grpcPort: undefined,
      trustedHops: 1,
      rlsDomain: 'tollgate',
    });
    expect(
      loadConfig({
        EXTAUTH_PORT: '8081',
        EXTAUTH_GRPC_PORT: '0',
        EXTAUTH_TRUSTED_HOPS: '2',
        EXTAUTH_RLS_DOMAIN: 'shop-api',
      }).extauth,
    ).toEqual({ port: 8081, grpcPort: 0, trustedHops: 2, rlsDomain: 'shop-api' });
    expect(() => loadConfig({ EXTAUTH_PORT: '70000' })).toThrow('EXTAUTH_PORT: must be between 0 and 65535');
    expect(() => loadConfig({ EXTAUTH_TRUSTED_HOPS: '0' })).toThrow(
      'EXTAUTH_TRUSTED_HOPS: must be between 1',
    );
    expect(() => loadConfig({ EXTAUTH_RLS_DOMAIN: 'two words' })).toThrow('EXTAUTH_RLS_DOMAIN');
  });
});
