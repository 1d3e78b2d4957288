/**
 * The embedded database runs with buffers sized for Tollgate's small tables (docs/decisions/0007),
 * and keeps them on every open, a reopened folder included.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openEmbedded } from '../../src/store/db.js';

const setting = async (handle: Awaited<ReturnType<typeof openEmbedded>>, name: string) =>
  (await sql<Record<string, string>>`select current_setting(${name}) as value`.execute(handle.db)).rows[0]?.value;

it('opens PGlite with 16MB shared buffers, 1MB WAL buffers and 1MB work_mem, on a new and a reopened folder', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-embedded-settings-'));
  try {
    for (const open of ['new', 'reopened']) {
      const handle = await openEmbedded(dataDir);
      try {
        const values = {
          open,
          shared_buffers: await setting(handle, 'shared_buffers'),
          wal_buffers: await setting(handle, 'wal_buffers'),
          work_mem: await setting(handle, 'work_mem'),
        };
        expect(values).toEqual({ open, shared_buffers: '16MB', wal_buffers: '1MB', work_mem: '1MB' });
      } finally {
        await handle.close();
      }
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
