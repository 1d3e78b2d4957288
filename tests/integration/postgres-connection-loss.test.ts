/**
 * A Postgres connection lost while Tollgate holds it (between two statements of a transaction, as when
 * Postgres stops under load) fails what waits on it and nothing else: node-postgres reports the loss
 * as an 'error' event on the checked-out client, which kills a process that does not listen for it.
 * Found by the Postgres outage e2e test, which it failed now and then under load.
 */
import pg from 'pg';
import { sql } from 'kysely';
import { openPostgres, type DbHandle } from '../../src/store/db.js';
import { sleep } from '../helpers/poll.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';

let database: TestDatabase;
let handle: DbHandle;

beforeAll(async () => {
  database = await createTestDatabase();
  handle = await openPostgres(database.url);
});

afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

it('survives its connection being terminated in the middle of a transaction, and serves the next query', async () => {
  const uncaught: Error[] = [];
  const onUncaught = (err: Error) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  // The pool lets the dead client go once it has ended: by then its connection has told all it will.
  const removed = new Promise((resolve) => handle.pool!.once('remove', resolve));
  try {
    const transaction = handle.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      // Postgres ends this session while the transaction waits between two statements.
      await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
      await sleep(300);
      await sql`select 1`.execute(trx);
    });
    await expect(transaction).rejects.toThrow();
    await removed;
    expect(uncaught).toEqual([]);
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(handle.db);
    expect(rows).toEqual([{ one: 1 }]);
  } finally {
    process.off('uncaughtException', onUncaught);
    await admin.end();
  }
});
