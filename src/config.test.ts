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
