/**
 * The two ways a `ProxyHarness` runs, for suites that hold in both: embedded (SQLite, in-process
 * counters), and Redis + a Postgres database of its own, migrated, dropped when the harness stops.
 */
import type { DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { afterAll, beforeAll } from '@jest/globals';
import { ProxyHarness, type HarnessOptions } from './proxy-harness.js';
import { createTestDatabase, REDIS_URL, testKeyPrefix, type TestDatabase } from './services.js';

export interface HarnessMode {
  readonly name: string;
  readonly redis: boolean;
  /** Starts `h` in the mode with `options`; resolves what stops it and throws its storage away. */
  start(h: ProxyHarness, options?: HarnessOptions): Promise<() => Promise<void>>;
}

export const HARNESS_MODES: readonly HarnessMode[] = [
  {
    name: 'embedded (SQLite, in-process counters)',
    redis: false,
    async start(h, options = {}) {
      await h.start(options);
      return () => h.stop();
    },
  },
  {
    name: 'Redis + Postgres',
    redis: true,
    async start(h, options = {}) {
      const database: TestDatabase = await createTestDatabase({ migrated: true });
      const handle: DbHandle = await database.open();
      await migrate(handle);
      await h.start({
        ...options,
        database: handle,
        env: { ...options.env, REDIS_URL, REDIS_KEY_PREFIX: testKeyPrefix() },
      });
      return async () => {
        await h.stop();
        await handle.close();
        await database.drop();
      };
    },
  },
];

/** A harness of its own for the suite that calls this: started in `mode` before its tests, stopped after. */
export function harnessIn(mode: HarnessMode, options?: HarnessOptions): ProxyHarness {
  const h = new ProxyHarness();
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    stop = await mode.start(h, options);
  }, 60_000);
  afterAll(async () => {
    await stop?.();
  });
  return h;
}
