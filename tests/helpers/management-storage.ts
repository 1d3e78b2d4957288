/** The two stores the management API runs on, each in a fresh database: embedded PGlite and a real Postgres. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbedded, openPostgres, type DbHandle } from '../../src/store/db.js';
import { createTestDatabase } from './services.js';

export interface Storage {
  readonly handle: DbHandle;
  dispose(): Promise<void>;
}

export const STORAGES: Record<'embedded' | 'postgres', () => Promise<Storage>> = {
  async embedded() {
    const dir = await mkdtemp(join(tmpdir(), 'tg-management-'));
    const handle = await openEmbedded(dir);
    return {
      handle,
      async dispose() {
        await handle.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
  async postgres() {
    const database = await createTestDatabase();
    const handle = await openPostgres(database.url);
    return {
      handle,
      async dispose() {
        await handle.close();
        await database.drop();
      },
    };
  },
};
