/**
 * The embedded SQLite store runs in WAL mode with synchronous NORMAL (an acknowledged change is in the WAL
 * when its commit returns), foreign keys enforced (the schema's cascades) and a busy timeout, on a new and
 * on a reopened file: SQLite keeps only the journal mode in the file; the rest is set at every open.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';

const pragma = async (handle: DbHandle, name: string) =>
  Object.values(
    (await sql<Record<string, unknown>>`select * from ${sql.raw(`pragma_${name}`)}`.execute(handle.db))
      .rows[0] ?? {},
  )[0];

it('opens SQLite in WAL mode, synchronous NORMAL, with foreign keys and a busy timeout, new and reopened', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-embedded-settings-'));
  try {
    for (const open of ['new', 'reopened']) {
      const handle = await openEmbedded(dataDir);
      try {
        const values = {
          open,
          journal_mode: await pragma(handle, 'journal_mode'),
          synchronous: await pragma(handle, 'synchronous'),
          foreign_keys: await pragma(handle, 'foreign_keys'),
          busy_timeout: await pragma(handle, 'busy_timeout'),
        };
        // synchronous 1 is NORMAL.
        expect(values).toEqual({
          open,
          journal_mode: 'wal',
          synchronous: 1,
          foreign_keys: 1,
          busy_timeout: 500,
        });
      } finally {
        await handle.close();
      }
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
