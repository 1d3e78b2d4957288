/**
 * The stores the management API runs on (each in a fresh database: the embedded SQLite store and a real
 * Postgres), their store-backed dependencies, and what tests do to a store in its own SQL.
 */
import { Reservations } from '../../src/reservations/reservations.js';
import { MemoryReservationStore } from '../../src/reservations/store.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { BillingExporter } from '../../src/billing/billing-exporter.js';
import { BillingExportRepository } from '../../src/billing/export-repository.js';
import { LedgerRepository } from '../../src/billing/ledger-repository.js';
import { KeyCache } from '../../src/keys/key-cache.js';
import { LocalKeyEvents, type KeyChange } from '../../src/keys/key-events.js';
import { LastUseTracker } from '../../src/keys/last-use.js';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { RateLimiter } from '../../src/limits/rate-limiter.js';
import { createManagementApp, type ManagementDeps } from '../../src/management/app.js';
import type { VerifyDeps } from '../../src/management/context.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { AuthThrottle } from '../../src/proxy/auth-throttle.js';
import { Routing } from '../../src/proxy/routing.js';
import { UsageHistory } from '../../src/usage/history.js';
import { UsageHistoryRepository } from '../../src/usage/history-repository.js';
import { DatabaseUsageSink } from '../../src/usage/database-usage-sink.js';
import { UsageReader } from '../../src/usage/reader.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { AdminTokenRepository } from '../../src/store/admin-token-repository.js';
import { AdminTokenLookup } from '../../src/management/admin-token-lookup.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import { ConsumerRepository } from '../../src/store/consumer-repository.js';
import { openEmbedded, type Db, type DbHandle } from '../../src/store/db.js';
import { sqlDialectOf } from '../../src/store/sql-dialect.js';
import type { Database } from '../../src/store/schema.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { PlanRepository } from '../../src/store/plan-repository.js';
import { createTestDatabase } from './services.js';

export interface Storage {
  readonly handle: DbHandle;
  /** The Postgres storage's URL, for a second connection with other settings. */
  readonly url?: string;
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
    const database = await createTestDatabase({ migrated: true });
    const handle = await database.open();
    return {
      handle,
      url: database.url,
      async dispose() {
        await handle.close();
        await database.drop();
      },
    };
  },
};

/**
 * The store-backed dependencies of the management app over `db`, as production wires them; the
 * credential throttle is set high so tests that send many wrong tokens see their 401s.
 */
export function storeDeps(db: Db, throttle = new AuthThrottle({ limit: 1_000_000, period: 'minute' })) {
  return {
    db,
    keys: new KeyRepository(db),
    plans: new PlanRepository(db),
    consumers: new ConsumerRepository(db),
    tokens: new AdminTokenRepository(db),
    tokenLookup: new AdminTokenLookup(new AdminTokenRepository(db), Date.now),
    audit: new AuditRepository(db),
    throttle,
    trustProxy: { hops: 0 },
  };
}

/** One deployment's reservations: every app over the same database settles what another reserved. */
const reservationStores = new WeakMap<Db, MemoryReservationStore>();
function reservationStoreOf(db: Db): MemoryReservationStore {
  let store = reservationStores.get(db);
  if (store === undefined) reservationStores.set(db, (store = new MemoryReservationStore()));
  return store;
}

/**
 * Everything the management app needs over `db`, with test defaults (no pending usage, in-process
 * limiter, local key events, a fresh encryption key, no prefix, silent logs, the real clock);
 * `overrides` sets what a test observes. The default limiter's sweeper timer is unref'd.
 */
export function managementDeps(
  db: Db,
  overrides: Partial<Omit<ManagementDeps, 'usage'>> &
    Pick<ManagementDeps, 'rootToken'> & { usage?: UsageReader },
): ManagementDeps {
  const encryptionKeys = overrides.encryptionKeys ?? [randomBytes(32)];
  const logger = overrides.logger ?? createLogger('silent');
  const metrics = overrides.metrics ?? new Metrics();
  const clock = overrides.clock ?? Date.now;
  const limiter = overrides.limiter ?? new MemoryRateLimiter();
  const keyEvents = overrides.keyEvents ?? new LocalKeyEvents();
  const store = storeDeps(db);
  // Verify counts in a recorder that is never started: what it counted stays pending, and reads show it.
  const recorder = new UsageRecorder(new DatabaseUsageSink(new UsageRepository(db)), logger, metrics);
  const usage = overrides.usage ?? new UsageReader(new UsageRepository(db), [recorder]);
  const lastUse = new LastUseTracker((times) => store.keys.markUsed(times), logger);
  const verification: VerifyDeps = {
    keyCache: new KeyCache({
      lookup: (hash) => store.keys.findBySecretHash(hash),
      events: keyEvents,
      metrics,
      defaultRateLimit: overrides.defaultRateLimit,
      clock,
    }),
    limiter,
    clock,
    authThrottle: new AuthThrottle({ limit: 100, period: 'minute' }),
    // No route table: every request takes the catch-all, which verify never forwards to.
    routing: new Routing({
      config: {
        upstreamUrl: new URL('http://127.0.0.1:9'),
        upstreamTimeoutMs: 1_000,
        corsAllowedOrigins: [],
        customerIdHeader: 'x-customer-id',
      },
      metrics,
    }),
    recorder,
    lastUse,
    logger,
    reservations: new Reservations(reservationStoreOf(db), {
      limiter,
      recorder,
      lastUse,
      metrics,
      logger,
      clock,
      config: { reservationTtlSeconds: 900, concurrencyLeaseSeconds: 30 },
    }),
  };
  return {
    ...store,
    usage,
    history: new UsageHistory(new UsageHistoryRepository(db), usage),
    usageRetention: { minuteHours: 48, hourDays: 90, dayDays: 400, monthMonths: 60 },
    // In process, the tests' reference servers listen on loopback over http.
    portalReference: { allowHttp: true, allowPrivate: true },
    limiter,
    keyEvents,
    verification,
    encryptionKeys,
    defaultRateLimit: undefined,
    prefix: '',
    leaks: { keyPrefix: 'tg_', action: 'disable', githubKeysUrl: new URL('http://127.0.0.1:9/keys') },
    logger,
    metrics,
    clock,
    billingExports: new BillingExportRepository(db),
    billingRuns: new LedgerRepository(db),
    // Runs only when asked (POST …/runs); closes a bucket as soon as it ends.
    billing: new BillingExporter(db, encryptionKeys, logger, metrics, clock, {
      runEveryMs: 60_000,
      settleMs: 0,
    }),
    ...overrides,
  };
}

/** Every row of `table` as JSON text: what a test searches for something that must never be stored. */
export async function storedText(db: Db, table: keyof Database): Promise<string> {
  return JSON.stringify(await db.selectFrom(table).selectAll().execute());
}

/**
 * Makes the database refuse every `operation` on `table` (a trigger raising `name`) until the
 * returned function lifts it again: a write that fails inside the database, whichever it is.
 */
export async function refuseWrites(
  db: Db,
  name: string,
  table: keyof Database,
  operation: 'insert' | 'update',
): Promise<() => Promise<void>> {
  const trigger = sql.id(name);
  const on = sql.table(table);
  if (sqlDialectOf(db).name === 'sqlite') {
    await sql`create trigger ${trigger} before ${sql.raw(operation)} on ${on} begin select raise(abort, ${sql.lit(name)}); end`.execute(
      db,
    );
    return async () => void (await sql`drop trigger ${trigger}`.execute(db));
  }
  const fn = sql.id(`${name}_fn`);
  await sql`create function ${fn}() returns trigger language plpgsql as $$ begin raise exception ${sql.lit(name)}; end $$`.execute(
    db,
  );
  await sql`create trigger ${trigger} before ${sql.raw(operation)} on ${on} for each row execute function ${fn}()`.execute(
    db,
  );
  return async () => {
    await sql`drop trigger ${trigger} on ${on}`.execute(db);
    await sql`drop function ${fn}()`.execute(db);
  };
}

/**
 * The management app over `db` with the root token, and what a replica beside it would hold: a key
 * cache that hears the same announcements, and every announcement in order in `announced`.
 */
export function managementWithKeyCache(db: Db, limiter: RateLimiter, rootToken: string, clock: () => number) {
  const announced: KeyChange[] = [];
  const events = new LocalKeyEvents();
  events.subscribe((change) => announced.push(change));
  const app = createManagementApp(managementDeps(db, { limiter, keyEvents: events, rootToken, clock }));
  const keys = new KeyRepository(db);
  const cache = new KeyCache({
    lookup: (hash) => keys.findBySecretHash(hash),
    events,
    metrics: new Metrics(),
    defaultRateLimit: undefined,
    clock,
  });
  return { app, cache, announced };
}
