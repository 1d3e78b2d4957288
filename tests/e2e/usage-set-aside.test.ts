/**
 * The built server, three replicas on one Postgres and one Redis, then one embedded process: a usage
 * batch the database refuses (here a CHECK constraint or trigger the operator added, not a NUL) is set
 * aside and reported (an error line naming it, tollgate_usage_batches_set_aside on every replica), the
 * key's later usage still reaches the database, and once the rule is dropped the set-aside batch is
 * applied exactly once (contract section 32, decision record 0145).
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Redis } from 'ioredis';
import pg from 'pg';
import { startEmbedded, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';
import { EMBEDDED_FILE } from '../../src/store/db.js';
import { decodeUsage } from '../../src/usage/redis/field-codec.js';
import { usageKeys } from '../../src/usage/redis/key-layout.js';
import { storedMinuteRequests, type UsageStore } from '../helpers/stored-usage.js';

const POISON = 'poison';
const PATIENCE = { timeoutMs: 30_000, everyMs: 100 };

/** The database behind a fleet, as the test reaches it: SQL in, first column of the first row out. */
interface Store {
  query(text: string, params?: string[]): Promise<unknown>;
  close(): Promise<void>;
}

function postgresStore(url: string): Store {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  return {
    query: async (text, params = []) => Object.values((await pool.query(text, params)).rows[0] ?? {})[0],
    close: () => pool.end(),
  };
}

/**
 * Redis mode: how many of `keyId`'s poison requests the batches Postgres refused hold, read where the
 * flusher leaves them sealed. A refused batch is set aside whole there (docs/guides/operations.md), so
 * usage sealed with a refused request waits with it: the test sends the later usage once all three are held.
 */
async function poisonHeldInRedis(fleet: Fleet, keyId: string): Promise<number> {
  const redis = new Redis(fleet.replicas.env.REDIS_URL!);
  try {
    const layout = usageKeys(fleet.replicas.env.REDIS_KEY_PREFIX!);
    let held = 0;
    for (const batchId of await redis.smembers(layout.setAside)) {
      const flat = (await redis.call('HGETALL', layout.batchHash(batchId, keyId))) as string[];
      held += decodeUsage(flat).customers.get(POISON)?.requests ?? 0;
    }
    return held;
  } finally {
    redis.disconnect();
  }
}

function sqliteStore(file: string): Store {
  const db = new DatabaseSync(file);
  db.exec('PRAGMA busy_timeout = 5000');
  return {
    query: async (text, params = []) => {
      const row = db.prepare(text.replace(/\$\d+/g, '?')).get(...params);
      return row === undefined ? undefined : Object.values(row)[0];
    },
    close: async () => db.close(),
  };
}

const scenarios = [
  {
    name: 'three replicas on Redis and Postgres',
    start: () => startFleet(3),
    store: (fleet: Fleet) => postgresStore(fleet.database!.url),
    usageStore: (fleet: Fleet): UsageStore => ({ databaseUrl: fleet.database!.url }),
    poisonHeld: poisonHeldInRedis,
    refuse: `ALTER TABLE usage_customers ADD CONSTRAINT refuses_poison CHECK (customer_id <> '${POISON}')`,
    mend: 'ALTER TABLE usage_customers DROP CONSTRAINT refuses_poison',
  },
  {
    name: 'one embedded process (SQLite)',
    start: () => startEmbedded(),
    store: (fleet: Fleet) => sqliteStore(join(fleet.replicas.env.DATA_DIR!, EMBEDDED_FILE)),
    usageStore: (fleet: Fleet): UsageStore => ({ dataDir: fleet.replicas.env.DATA_DIR! }),
    // Embedded, a refused batch is cut into parts: only the poison customer's rows wait (decision
    // record 0207), so the later usage is applied whichever hand-over it shares with them.
    poisonHeld: undefined,
    refuse: `CREATE TRIGGER refuses_poison BEFORE INSERT ON usage_customers WHEN NEW.customer_id = '${POISON}'
             BEGIN SELECT RAISE(ABORT, 'no poison'); END`,
    mend: 'DROP TRIGGER refuses_poison',
  },
];

describe.each(scenarios)('$name', ({ start, store: storeOf, usageStore, poisonHeld, refuse, mend }) => {
  let fleet: Fleet;
  let store: Store;

  beforeAll(async () => {
    fleet = await start();
    store = storeOf(fleet);
  }, 120_000);

  afterAll(async () => {
    await store?.close();
    await fleet?.stop();
  });

  const setAsideOn = async (t: Tollgate): Promise<number> => {
    const text = await (await fetch(t.opsUrl + '/metrics')).text();
    return Number(/^tollgate_usage_batches_set_aside (\S+)$/m.exec(text)?.[1] ?? NaN);
  };
  const stored = async (keyId: string, customerId: string): Promise<number> =>
    Number(
      (await store.query(
        'SELECT COALESCE(SUM(requests), 0) FROM usage_customers WHERE key_id = $1 AND customer_id = $2',
        [keyId, customerId],
      )) ?? 0,
    );
  const send = async (t: Tollgate, secret: string, customerId: string) =>
    (await fetch(t.url + '/v1/items', { headers: { 'x-api-key': secret, 'x-customer-id': customerId } }))
      .status;

  it('sets the refused batch aside, applies the later usage, and applies it once when mended', async () => {
    const [first] = fleet.members;
    const { body: key } = await first!.admin('POST', '/consumer-api-key/create', { name: 'set-aside' });
    await store.query(refuse);

    // The refused requests fall in one hand-over or, on a slow machine, two or three: a batch set aside for each.
    for (let i = 0; i < 3; i++) expect(await send(first!, key.secret, POISON)).toBe(200);
    const setAside = await waitFor(
      () => Promise.all(fleet.members.map(setAsideOn)),
      (counts) => counts.every((n) => n >= 1),
      PATIENCE,
    );
    expect(setAside.value.every((n) => n >= 1)).toBe(true);
    if (poisonHeld !== undefined)
      expect(
        (
          await waitFor(
            () => poisonHeld(fleet, key.id),
            (n) => n === 3,
            PATIENCE,
          )
        ).value,
      ).toBe(3);

    // Later usage of the same key, through every replica, reaches the database.
    for (const t of fleet.members)
      for (let i = 0; i < 2; i++) expect(await send(t, key.secret, 'later')).toBe(200);
    const later = await waitFor(
      () => stored(key.id, 'later'),
      (n) => n === 2 * fleet.members.length,
      PATIENCE,
    );
    expect(later.value).toBe(2 * fleet.members.length);
    expect(await stored(key.id, POISON)).toBe(0);
    const lines = fleet.members
      .flatMap((t) => t.output)
      .filter((l) => l.includes('refused by the database'))
      .map((l) => JSON.parse(l) as { level: number; batchId: string });
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const line of lines) expect(line).toMatchObject({ level: 50, batchId: expect.any(String) });
    // Each set-aside batch is named once.
    expect(new Set(lines.map((l) => l.batchId)).size).toBe(lines.length);

    await store.query(mend);
    const mended = await waitFor(
      () => Promise.all(fleet.members.map(setAsideOn)),
      (counts) => counts.every((n) => n === 0),
      PATIENCE,
    );
    expect(mended.value).toEqual(fleet.members.map(() => 0));
    expect(await stored(key.id, POISON)).toBe(3);
    expect(await stored(key.id, 'later')).toBe(2 * fleet.members.length);
    // Exactly once in what a billing export reads, too.
    expect(await storedMinuteRequests(usageStore(fleet), [key.id])).toBe(3 + 2 * fleet.members.length);
  });
});
