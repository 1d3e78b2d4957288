/**
 * Migrations run each file whole, inside one transaction (under the advisory lock on Postgres): on the
 * embedded SQLite store (exec) its own files, a trigger's BEGIN … END with `;` at line ends included;
 * on Postgres (simple query protocol) a plpgsql `$$` body likewise.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql } from 'kysely';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { migrate, SQL_DIR } from '../../src/store/migrate.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { PlanRepository } from '../../src/store/plan-repository.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';

const FIXTURES_ROOT = resolve(import.meta.dirname, '../fixtures/migrations');

/** Each dialect's words for the test's two statements: one more bump, and a call that fails. */
const SCRIPT = {
  postgres: {
    fixtures: FIXTURES_ROOT,
    bump: 'SELECT bump(10);',
    counterTables: sql`select count(*)::int as n from pg_tables where tablename = 'counter'`,
  },
  embedded: {
    fixtures: join(FIXTURES_ROOT, 'sqlite'),
    bump: 'INSERT INTO bumps (by) VALUES (10);',
    counterTables: sql`select count(*) as n from sqlite_master where name = 'counter'`,
  },
};

const counter = async (handle: DbHandle) =>
  (await sql<{ n: number }>`select n from counter`.execute(handle.db)).rows[0]?.n;

describe.each(['embedded', 'postgres'] as const)('migrate on %s', (kind) => {
  let handle: DbHandle;
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  const open = async () => (database ? database.open() : openEmbedded(dataDir!));
  const { fixtures: FIXTURES, bump, counterTables } = SCRIPT[kind];

  beforeEach(async () => {
    if (kind === 'postgres') database = await createTestDatabase();
    else dataDir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-'));
    handle = await open();
  });

  afterEach(async () => {
    await handle.close();
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs a file with a $$ function body whole, and each file once', async () => {
    expect(await migrate(handle, FIXTURES)).toEqual(['001_counter.sql', '002_bump.sql']);
    expect(await counter(handle)).toBe(5);
    expect(await migrate(handle, FIXTURES)).toEqual([]);
    expect(await counter(handle)).toBe(5);
  });

  it('applies nothing of a run whose later file fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrations-'));
    try {
      cpSync(FIXTURES, dir, { recursive: true });
      writeFileSync(join(dir, '003_broken.sql'), `${bump}\nSELECT no_such_function();\n`);
      await expect(migrate(handle, dir)).rejects.toThrow(/no_such_function/);
      const tables = await counterTables.execute(handle.db);
      expect(tables.rows).toEqual([{ n: 0 }]);
      // Fixed, the same files apply in full.
      writeFileSync(join(dir, '003_broken.sql'), `${bump}\n`);
      expect(await migrate(handle, dir)).toEqual(['001_counter.sql', '002_bump.sql', '003_broken.sql']);
      expect(await counter(handle)).toBe(15);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // The embedded SQLite store began with today's schema (sql/sqlite/001_init.sql) and has one process per
  // DATA_DIR: neither an older schema to upgrade in place nor replicas migrating together.
  if (kind === 'postgres') {
    it('upgrades a database of the schema before key lifecycle in place, keeping its keys, plans and usage', async () => {
      // The schema as released before sql/009, with data in it.
      const before = mkdtempSync(join(tmpdir(), 'tollgate-schema-'));
      try {
        for (const file of readdirSync(SQL_DIR).filter((f) => f < '009'))
          cpSync(join(SQL_DIR, file), join(before, file));
        expect(await migrate(handle, before)).toHaveLength(4);
        await sql`insert into rate_limit_plans (rate_limit_id, description, "limit", period, created_at)
          values ('gold', 'old plan', 100, 'hour', '2026-01-02T03:04:05Z')`.execute(handle.db);
        await sql`insert into api_keys (id, name, secret_hash, secret_ciphertext, rate_limit_id, created_at, last_updated)
          values ('key_old', 'old key', ${Buffer.alloc(32, 7)}, ${Buffer.alloc(40, 1)}, 'gold', '2026-01-02T03:04:05Z', '2026-01-03T00:00:00Z')`.execute(
          handle.db,
        );
        await sql`insert into usage_endpoints (key_id, endpoint, requests, successful, failed, total_duration_ms)
          values ('key_old', '/v1/a', 10, 9, 1, 55)`.execute(handle.db);
      } finally {
        rmSync(before, { recursive: true, force: true });
      }

      const ran = await migrate(handle);
      expect(ran[0]).toBe('009_key_lifecycle.sql');
      const keys = new KeyRepository(handle.db);
      expect(await keys.get('key_old')).toMatchObject({
        name: 'old key',
        rateLimitId: 'gold',
        enabled: true,
        expiresAt: null,
        externalId: null,
        metadata: '{}',
        lastUsedAt: null,
        lastUpdated: new Date('2026-01-03T00:00:00Z'),
      });
      expect(await keys.findBySecretHash(Buffer.alloc(32, 7))).toEqual({
        id: 'key_old',
        name: 'old key',
        externalId: null,
        metadata: '{}',
        rateLimitId: 'gold',
        limits: [{ name: 'hour', limit: 100, period: 'hour', algorithm: 'fixed' }],
        enabled: true,
        expiresAtMs: null,
        secretValidUntilMs: null,
        consumer: null,
        costs: [],
        allowedRouteIds: null,
        allowedOrigins: null,
        allowedAddresses: null,
        balance: null,
      });
      expect(await new PlanRepository(handle.db).get('gold')).toMatchObject({
        description: 'old plan',
        limits: [{ name: 'hour', limit: 100, period: 'hour', algorithm: 'fixed' }],
        lastUpdated: new Date('2026-01-02T03:04:05Z'),
        keyCount: 1,
      });
      const usage = await sql<{
        requests: number;
      }>`select requests from usage_endpoints where key_id = 'key_old'`.execute(handle.db);
      expect(usage.rows).toEqual([{ requests: 10 }]);
      expect(await migrate(handle)).toEqual([]);
    });

    it('upgrades a database of the schema before plans of several limits in place: its plans read as one limit', async () => {
      const before = mkdtempSync(join(tmpdir(), 'tollgate-schema-'));
      try {
        for (const file of readdirSync(SQL_DIR).filter((f) => f < '013'))
          cpSync(join(SQL_DIR, file), join(before, file));
        await migrate(handle, before);
        await sql`insert into rate_limit_plans (rate_limit_id, description, "limit", period, created_at, last_updated)
          values ('silver', 'per minute', 60, 'minute', '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z')`.execute(
          handle.db,
        );
        await sql`insert into api_keys (id, name, secret_hash, secret_ciphertext, rate_limit_id, created_at, last_updated)
          values ('key_silver', 'bound', ${Buffer.alloc(32, 9)}, ${Buffer.alloc(40, 1)}, 'silver', '2026-01-02T03:04:05Z', '2026-01-03T00:00:00Z')`.execute(
          handle.db,
        );
      } finally {
        rmSync(before, { recursive: true, force: true });
      }
      expect(await migrate(handle)).toContain('013_plan_limits.sql');
      const plans = new PlanRepository(handle.db);
      const silver = [{ name: 'minute', limit: 60, period: 'minute', algorithm: 'fixed' }];
      expect(await plans.get('silver')).toMatchObject({
        description: 'per minute',
        limits: silver,
        keyCount: 1,
      });
      expect((await new KeyRepository(handle.db).findBySecretHash(Buffer.alloc(32, 9)))?.limits).toEqual(
        silver,
      );
      // What a replica of the previous version writes still reads whole; years are a period now.
      await sql`update rate_limit_plans set "limit" = 61 where rate_limit_id = 'silver'`.execute(handle.db);
      expect((await plans.get('silver'))?.limits).toEqual([{ ...silver[0], limit: 61 }]);
      const now = new Date('2026-02-01T00:00:00Z');
      const limits = [
        { name: 'burst', limit: 5, period: 'second', algorithm: 'fixed' },
        { name: 'year', limit: 1_000, period: 'year', algorithm: 'sliding' },
      ] as const;
      expect(await plans.insert({ rateLimitId: 'gold', description: '', limits, createdAt: now })).toBe(true);
      expect((await plans.get('gold'))?.limits).toEqual(limits);
      // limit and period keep the first limit, for readers that know only one.
      const stored = await sql<{
        limit: number;
        period: string;
      }>`select "limit", period from rate_limit_plans where rate_limit_id = 'gold'`.execute(handle.db);
      expect(stored.rows).toEqual([{ limit: 5, period: 'second' }]);
    });

    it('applies each file once when replicas migrate together', async () => {
      const others = await Promise.all([open(), open(), open()]);
      try {
        const ran = await Promise.all([handle, ...others].map((h) => migrate(h, FIXTURES)));
        expect(ran.flat().sort()).toEqual(['001_counter.sql', '002_bump.sql']);
        expect(await counter(handle)).toBe(5);
      } finally {
        await Promise.all(others.map((h) => h.close()));
      }
    });
  }
});
