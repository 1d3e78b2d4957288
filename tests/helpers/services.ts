import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { PostgresTimeouts } from '../../src/config.js';
import type { DbHandle } from '../../src/store/db.js';

/**
 * Real Postgres and Redis for integration tests: `DATABASE_URL` and `REDIS_URL` when set (.ci/run
 * sets them to the servers on 127.0.0.1), else the same local defaults. Each test file gets its own
 * database and its own Redis key prefix, so files run in parallel without touching each other.
 */
export const ADMIN_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * Redis connections of tests that count what is admitted and do not time Redis: a command may wait
 * longer than the service's 500 ms while a whole test run starves a redis-server of CPU
 * (redis-failover.test.ts times the default; a Jest worker too busy to read an answer in time no
 * longer fails it: src/redis/command-deadline.ts).
 */
export const COUNTING_REDIS: { readonly commandTimeoutMs: number } = { commandTimeoutMs: 5_000 };

/**
 * Postgres connections of tests that do not time Postgres: a whole test run can starve Postgres, and
 * the processes waiting on it, of CPU for longer than the service's 2 s to connect and 5 s a
 * statement (tests/integration/postgres-connection-loss.test.ts keeps the defaults).
 */
const PATIENT_POSTGRES: PostgresTimeouts = { connectMs: 10_000, queryMs: 30_000 };
/** PATIENT_POSTGRES as the settings of a Tollgate process (docs/guides/operations.md). */
export const PATIENT_POSTGRES_ENV = {
  DATABASE_CONNECT_TIMEOUT_MS: String(PATIENT_POSTGRES.connectMs),
  DATABASE_QUERY_TIMEOUT_MS: String(PATIENT_POSTGRES.queryMs),
};

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  /** The service's handle on it, waiting as PATIENT_POSTGRES does. */
  open(): Promise<DbHandle>;
  drop(): Promise<void>;
}

/** The service's handle on the database at `url`, with PATIENT_POSTGRES' deadlines. */
async function openPatiently(url: string): Promise<DbHandle> {
  const { openPostgres } = await import('../../src/store/db.js');
  return openPostgres(url, PATIENT_POSTGRES);
}

/**
 * `migrated`: a copy of a database holding every migration (Postgres copies its files: a fraction of
 * the time of running the migrations), for the files that would migrate theirs first anyway.
 */
export async function createTestDatabase({ migrated = false } = {}): Promise<TestDatabase> {
  const name = 'tg_test_' + randomBytes(6).toString('hex');
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  try {
    const template = migrated ? ` template ${await migratedTemplate(admin)}` : '';
    await admin.query(`create database ${name}${template}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = '/' + name;
  return {
    url: url.toString(),
    name,
    open: () => openPatiently(url.toString()),
    async drop() {
      const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

export function testKeyPrefix(): string {
  return 'tgtest:' + randomBytes(6).toString('hex') + ':';
}

const SQL_DIR = join(import.meta.dirname, '../../sql');
/** pg_advisory_lock key of the template's making: one test file makes it, the others wait. */
const TEMPLATE_LOCK = 72_201_033;

/**
 * The name of a database holding every migration, named by their contents: made by the first test
 * file that asks (under a lock), kept for later runs, made again under a new name when a migration
 * changes, so a copy always has the current schema. Marked a template only once complete.
 */
async function migratedTemplate(admin: pg.Client): Promise<string> {
  const hash = createHash('sha256');
  for (const file of readdirSync(SQL_DIR)
    .filter((f) => f.endsWith('.sql'))
    .sort())
    hash.update(file).update(readFileSync(join(SQL_DIR, file)));
  const name = 'tg_template_' + hash.digest('hex').slice(0, 16);
  await admin.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK]);
  try {
    const made = await admin.query('select 1 from pg_database where datname = $1 and datistemplate', [name]);
    if (made.rowCount) return name;
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`create database ${name}`);
    const url = new URL(ADMIN_DATABASE_URL);
    url.pathname = '/' + name;
    const { migrate } = await import('../../src/store/migrate.js');
    const handle = await openPatiently(url.toString());
    try {
      await migrate(handle);
    } finally {
      await handle.close();
    }
    await admin.query(`alter database ${name} is_template true`);
    return name;
  } finally {
    await admin.query('select pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
  }
}
