import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REDIS_URL, createTestDatabase, testKeyPrefix } from '../../helpers/services.js';

/** The settings of one Tollgate deployment for a test, and how to throw its storage away afterwards. */
export interface Deployment {
  readonly env: Record<string, string>;
  dispose(): Promise<void>;
}

export interface Mode {
  readonly name: string;
  deploy(): Promise<Deployment>;
}

/** The two ways Tollgate runs: nothing configured (embedded SQLite, in-process counters), and Redis + Postgres. */
export const MODES: readonly Mode[] = [
  {
    name: 'embedded (SQLite, in-process counters)',
    async deploy() {
      const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-mode-'));
      return {
        env: { DATA_DIR: dataDir },
        dispose: async () => rmSync(dataDir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: 'Redis + Postgres',
    async deploy() {
      const database = await createTestDatabase({ migrated: true });
      return {
        env: {
          DATABASE_URL: database.url,
          REDIS_URL,
          REDIS_KEY_PREFIX: testKeyPrefix(),
          SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        },
        dispose: () => database.drop(),
      };
    },
  },
];
