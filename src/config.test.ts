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
