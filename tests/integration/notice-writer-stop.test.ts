/**
 * The limit notices' last write at shutdown (src/limits/notice-writer.ts, decision record 0249) against
 * a real Postgres: a threshold noticed while the interval's write waits on the outbox is written by
 * `stop()`, after that write, not lost with the process.
 */
import pg from 'pg';
import { sql } from 'kysely';
import { LimitNotices } from '../../src/limits/limit-notices.js';
import { NoticeWriter } from '../../src/limits/notice-writer.js';
import { createLogger } from '../../src/ops/logger.js';
import { ruleOf } from '../../src/plans/plan.js';
import { windowAt } from '../../src/plans/window.js';
import { STORAGES, type Storage } from '../helpers/management-storage.js';
import { waitFor } from '../helpers/poll.js';

let storage: Storage;

beforeAll(async () => {
  storage = await STORAGES.postgres();
}, 60_000);

afterAll(async () => {
  await storage?.dispose();
});

it('writes at stop the notices taken after a write still waiting on the outbox began', async () => {
  const db = storage.handle.db;
  const now = Date.now();
  const rule = ruleOf({ limit: 1_000, period: 'hour', name: 'hourly' });
  const window = windowAt('hour', now);
  const notices = new LimitNotices();
  // Its interval's writes every 10 ms: the first one after the notice below takes it.
  const writer = new NoticeWriter(db, notices, createLogger('silent'), () => now, 10);
  // Another session holds the outbox: the interval's write waits on it, as on a slow database.
  const holder = new pg.Client({ connectionString: storage.url });
  await holder.connect();
  await holder.query('begin');
  await holder.query('lock table outbox_events in access exclusive mode');
  notices.quotaReached('consumer', 'con_first', rule, window, 80, now);
  writer.start();
  await waitFor(
    async () =>
      (
        await holder.query<{ n: string | number }>(
          "select count(*) as n from pg_locks where relation = 'outbox_events'::regclass and not granted",
        )
      ).rows[0]!.n,
    (waiting) => Number(waiting) === 1,
  );
  // Noticed while that write waits, then the replica stops.
  notices.quotaReached('consumer', 'con_second', rule, window, 80, now);
  const stopping = writer.stop();
  await holder.query('commit');
  await holder.end();
  await stopping;
  const written = await sql<{ payload: string }>`select payload from outbox_events order by seq`.execute(db);
  expect(written.rows.map((row) => JSON.parse(row.payload).data.consumerId)).toEqual([
    'con_first',
    'con_second',
  ]);
});
