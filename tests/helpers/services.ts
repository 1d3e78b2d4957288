import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * Real Postgres and Redis for integration tests: `DATABASE_URL` and `REDIS_URL` when set (.ci/run
 * sets them to the servers on 127.0.0.1), else the same local defaults. Each test file gets its own
 * database and its own Redis key prefix, so files run in parallel without touching each other.
 */
export const ADMIN_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = 'tg_test_' + randomBytes(6).toString('hex');
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = '/' + name;
  return {
    url: url.toString(),
    name,
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
