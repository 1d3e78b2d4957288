/**
 * A DATA_DIR of the PGlite era is upgraded to the SQLite store once (the upgrade-data-dir command): every
 * row of every table arrives unchanged (times, flags, bytes, counters, JSON text), the repositories read
 * it as they read PGlite, PGlite's folder is renamed aside (never deleted), and a second run has nothing
 * to do. Until then the SQLite store refuses to open there, naming the command.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { hashSecret } from '../../src/keys/secret.js';
import { AdminTokenRepository } from '../../src/store/admin-token-repository.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import { EMBEDDED_FILE, openEmbedded, PGLITE_FOLDER, type Db } from '../../src/store/db.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate, SQL_DIR } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { PlanRepository } from '../../src/store/plan-repository.js';
import { upgradeFromPglite } from '../../src/store/upgrade-from-pglite.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { createPgliteDataDir, GOLD_LIMITS, type PgliteDataDir } from '../helpers/pglite-data-dir.js';

/** Every row of every table as plain values, sorted: Date as ISO text, bytes as hex, numbers as numbers. */
async function everyRow(db: Db, tables: readonly string[]): Promise<Record<string, string[]>> {
  const plain = (v: unknown): unknown =>
    v instanceof Date
      ? v.toISOString()
      : v instanceof Uint8Array
        ? Buffer.from(v).toString('hex')
        : typeof v === 'bigint'
          ? Number(v)
          : v;
  const all: Record<string, string[]> = {};
  for (const table of tables) {
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db);
    all[table] = rows.rows
      .map((r) =>
        JSON.stringify(
          Object.fromEntries(
            Object.entries(r)
              .map(([k, v]) => [k, plain(v)])
              .sort(([a], [b]) => String(a).localeCompare(String(b))),
          ),
        ),
      )
      .sort();
  }
  return all;
}

/** Tables an earlier Tollgate's PGlite never held rows in: billing exports came later (sql/050). */
const TABLES = [
  'rate_limit_plans',
  'api_keys',
  'usage_endpoints',
  'usage_customers',
  'usage_batches',
  'usage_buckets',
  'usage_endpoint_buckets',
  'usage_customer_buckets',
  'admin_tokens',
  'audit_log',
];

const EMPTY_TABLES = [
  'storage_probe',
  'consumers',
  'routes',
  'outbox_events',
  'outbox_once',
  'webhooks',
  'webhook_deliveries',
  'leases',
  'billing_exports',
  'deleted_keys',
  'billing_export_buckets',
  'billing_export_sends',
  'billing_export_runs',
  'billing_export_attempts',
  'failure_log',
  'failure_left_out',
  'failure_offered',
  'usage_route_buckets',
  'portal_settings',
  'portal_sessions',
  'secret_scanning_reports',
  'in_flight_requests',
];

let dataDir: string;
let written: PgliteDataDir;
let before: Record<string, string[]>;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-upgrade-'));
  written = await createPgliteDataDir(dataDir);
  const pglite = await openPglite(join(dataDir, PGLITE_FOLDER));
  try {
    before = await everyRow(pglite.db, TABLES);
  } finally {
    await pglite.close();
  }
}, 120_000);

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

it('refuses to open the SQLite store beside a PGlite folder not upgraded yet, naming the command', async () => {
  await expect(openEmbedded(dataDir)).rejects.toThrow(
    `DATA_DIR ${dataDir} holds the PGlite database of an earlier Tollgate: upgrade it once with \`npm run upgrade-data-dir\``,
  );
  expect(existsSync(join(dataDir, EMBEDDED_FILE))).toBe(false);
});

it('copies every row of every table, renames the PGlite folder aside, and does nothing the second time', async () => {
  // Something to copy in every table.
  expect(Object.entries(before).filter(([, rows]) => rows.length === 0)).toEqual([]);

  const upgrade = await upgradeFromPglite(dataDir, new Date('2026-11-22T10:11:12Z'));
  expect(upgrade).toEqual({
    // Tables born after the PGlite era have nothing to copy.
    rows: {
      ...Object.fromEntries(TABLES.map((t) => [t, before[t]!.length])),
      ...Object.fromEntries(EMPTY_TABLES.map((t) => [t, 0])),
    },
    keptAt: join(dataDir, 'pglite-upgraded-2026-11-22T101112'),
  });
  expect(readdirSync(dataDir).sort()).toEqual(
    ['pglite-upgraded-2026-11-22T101112', 'secret-encryption.key', EMBEDDED_FILE].sort(),
  );
  expect(readdirSync(upgrade!.keptAt).length).toBeGreaterThan(0);

  const store = await openEmbedded(dataDir);
  try {
    expect(await everyRow(store.db, TABLES)).toEqual(before);
  } finally {
    await store.close();
  }
  expect(await upgradeFromPglite(dataDir)).toBeUndefined();
});

it('serves the copied rows through the repositories as PGlite did', async () => {
  const store = await openEmbedded(dataDir);
  try {
    const keys = new KeyRepository(store.db);
    const { key } = written;
    expect(await keys.findBySecretHash(hashSecret(key.secret))).toEqual({
      id: key.id,
      name: 'mobile-app',
      externalId: 'cus_42',
      metadata: '{"tier":"gold","n":1}',
      rateLimitId: written.planId,
      limits: GOLD_LIMITS,
      enabled: true,
      expiresAtMs: Date.parse('2030-01-01T00:00:00Z'),
      secretValidUntilMs: null,
      consumer: null,
      costs: [],
      allowedRouteIds: null,
      allowedOrigins: null,
      allowedAddresses: null,
      balance: null,
    });
    expect((await keys.findBySecretHash(hashSecret(key.previousSecret)))?.secretValidUntilMs).toBe(
      Date.parse('2030-01-01T00:00:00Z'),
    );
    expect(await keys.get(key.id)).toMatchObject({
      externalId: 'cus_42',
      metadata: '{"tier":"gold","n":1}',
      lastUsedAt: new Date('2026-11-20T14:07:30Z'),
    });
    expect((await keys.get(written.disabledKeyId))?.enabled).toBe(false);
    expect((await new PlanRepository(store.db).get(written.planId))?.keyCount).toBe(1);
    expect(
      (await new AdminTokenRepository(store.db).findByHash(hashSecret(written.adminToken)))?.scopes,
    ).toEqual(['keys:read', 'usage:read']);
    expect((await new AuditRepository(store.db).list({}, undefined, 10)).map((e) => e.action)).toEqual([
      'admin_token.create',
      'key.create',
      'plan.create',
    ]);

    // Usage counted exactly once across the upgrade: the batch PGlite applied is known applied.
    const usage = new UsageRepository(store.db);
    expect([...(await usage.appliedBatches([written.batchId]))]).toEqual([written.batchId]);
    expect(await usage.applyBatch(written.batchId, new Map())).toBe(false);
    expect((await usage.read(key.id)).endpoints.get('/v1/weather')?.requests).toBe(written.requests);
    // New keys continue the sequence after the copied ones.
    await keys.insert({
      id: 'key_after',
      name: 'after',
      secretHash: hashSecret('after'),
      secretCiphertext: Buffer.alloc(40),
      createdAt: new Date(),
    });
    const seqs = await store.db.selectFrom('api_keys').select(['id', 'seq']).orderBy('seq').execute();
    expect(seqs.at(-1)?.id).toBe('key_after');
  } finally {
    await store.close();
  }
});

it('finishes an upgrade that stopped after the copy was in place by setting the PGlite folder aside', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-upgrade-resume-'));
  try {
    const store = await openEmbedded(dir);
    await store.close();
    mkdirSync(join(dir, PGLITE_FOLDER));
    writeFileSync(join(dir, PGLITE_FOLDER, 'PG_VERSION'), '17\n');
    const upgrade = await upgradeFromPglite(dir, new Date('2026-11-22T10:11:12Z'));
    expect(upgrade).toEqual({ rows: {}, keptAt: join(dir, 'pglite-upgraded-2026-11-22T101112') });
    expect(readdirSync(dir).filter((f) => f.startsWith('pglite'))).toEqual([
      'pglite-upgraded-2026-11-22T101112',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('upgrades a PGlite folder of the last release with PGlite (sql/001–012): migrated first, then copied', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-upgrade-released-'));
  const released = mkdtempSync(join(tmpdir(), 'tollgate-schema-'));
  try {
    for (const file of readdirSync(SQL_DIR).filter((f) => f < '013'))
      cpSync(join(SQL_DIR, file), join(released, file));
    const pglite = await openPglite(join(dir, PGLITE_FOLDER));
    try {
      expect(await migrate(pglite, released)).toContain('012_usage_buckets.sql');
      // Rows as that release wrote them: a plan of one limit in its own columns, a key bound to it, usage.
      await sql`insert into rate_limit_plans (rate_limit_id, description, "limit", period, created_at, last_updated)
        values ('silver', 'per minute', 60, 'minute', '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z')`.execute(
        pglite.db,
      );
      await sql`insert into api_keys (id, name, secret_hash, secret_ciphertext, rate_limit_id, created_at, last_updated)
        values ('key_silver', 'bound', ${hashSecret('silver-secret')}, ${Buffer.alloc(40, 1)}, 'silver', '2026-01-02T03:04:05Z', '2026-01-03T00:00:00Z')`.execute(
        pglite.db,
      );
      await sql`insert into usage_endpoints (key_id, endpoint, requests, successful, failed, total_duration_ms)
        values ('key_silver', '/v1/orders', 10, 9, 1, 50)`.execute(pglite.db);
    } finally {
      await pglite.close();
    }

    const upgrade = await upgradeFromPglite(dir);
    expect(upgrade?.rows).toMatchObject({ rate_limit_plans: 1, api_keys: 1, usage_endpoints: 1 });
    const store = await openEmbedded(dir);
    try {
      const silver = [{ name: 'minute', limit: 60, period: 'minute', algorithm: 'fixed' }];
      expect(await new PlanRepository(store.db).get('silver')).toMatchObject({
        description: 'per minute',
        limits: silver,
        keyCount: 1,
      });
      expect(await new KeyRepository(store.db).findBySecretHash(hashSecret('silver-secret'))).toMatchObject({
        id: 'key_silver',
        rateLimitId: 'silver',
        limits: silver,
        enabled: true,
      });
      expect(
        (await new UsageRepository(store.db).read('key_silver')).endpoints.get('/v1/orders'),
      ).toMatchObject({ requests: 10, successful: 9, failed: 1 });
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(released, { recursive: true, force: true });
  }
});
