/**
 * One consumer's balance of 1,000 credits spent through three built replicas (Redis + Postgres) by
 * several keys at once, searches costing 5 and lookups 1 (docs/guides/credits.md), while the private
 * redis-server is killed and restarted empty halfway: exactly 1,000 units reach the backend, the
 * balance ends at 0 (below the smallest cost) and never reports less, every replica shows the same,
 * and the database keeps it. A Redis that lost everything neither gives the balance back (more than
 * 1,000 would pass) nor counts it twice (fewer would).
 */
import pg from 'pg';
import { RedisServer } from '../helpers/redis-server.js';
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { hitFull, Replicas, sleep, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';

const BALANCE = 1_000;
const KEYS = 6;
const CLIENTS = 12;
const COSTS: Record<string, number> = { '/v1/search': 5, '/v1/lookup': 1 };

let redis: RedisServer;
let database: TestDatabase;
let backend: Backend;
let replicas: Replicas;
let members: Tollgate[];

beforeAll(async () => {
  [redis, database, backend] = await Promise.all([RedisServer.start(), createTestDatabase(), startBackend()]);
  replicas = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: testKeyPrefix(),
    UPSTREAM_URL: backend.url,
  });
  members = await replicas.start(3);
}, 120_000);

afterAll(async () => {
  await replicas?.stopAll();
  await redis?.destroy();
  await backend?.close();
  await database?.drop();
  expectNoSecretsLogged();
}, 60_000);

/** A repeatable sequence of numbers in [0, 1) (mulberry32): the same mix of paths on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

it('spends exactly 1,000 credits of one consumer through three replicas and several keys, costs 1 and 5 mixed, across a Redis restarted empty', async () => {
  const [admin] = members;
  const plan = await admin!.admin('POST', '/rate-limit/create', {
    rateLimitId: 'priced',
    limits: [{ limit: 1_000_000_000, period: 'month' }],
    costs: Object.entries(COSTS).map(([pathPrefix, cost]) => ({ match: { pathPrefix }, cost })),
  });
  expect(plan.status).toBe(201);
  const consumer = await admin!.admin('POST', '/tollgate/consumers', {
    name: 'acme',
    rateLimitId: 'priced',
    credits: { remaining: BALANCE, refill: { amount: BALANCE, interval: 'month', dayOfMonth: 15 } },
  });
  expect(consumer.status).toBe(201);
  const consumerId = consumer.body.consumerId as string;
  const keys: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    const key = await admin!.admin('POST', '/consumer-api-key/create', { name: `k${k}`, consumerId });
    expect(key.status).toBe(201);
    keys.push(key.body.secret as string);
  }

  let admittedUnits = 0;
  let restarted: Promise<void> | undefined;
  const refusals: { remaining: number; cost: number }[] = [];
  const unexpected: string[] = [];
  let unavailable = 0;
  const client = async (c: number) => {
    const next = seeded(c + 1);
    for (let i = 0; ; i++) {
      const path = next() < 0.4 ? '/v1/search' : '/v1/lookup';
      const t = members[(c + i) % members.length]!;
      const { status, body } = await hitFull(t, keys[(c + i) % KEYS]!, `${path}/${c}-${i}`);
      if (status === 200) {
        admittedUnits += COSTS[path]!;
        // Halfway, Redis dies and comes back empty while the other clients keep sending.
        if (admittedUnits >= BALANCE / 2 && restarted === undefined)
          restarted = (async () => {
            await redis.stop();
            await sleep(300);
            await redis.restart();
          })();
      } else if (status === 429 && body.code === 'credits_exhausted') {
        refusals.push({ remaining: body.remaining, cost: body.cost });
        // A lookup refused: the balance holds less than 1, and nothing ever refills it in this run.
        if (body.cost === 1) return;
      } else if (status === 503 && body.code === 'limit_unavailable') {
        // Redis is down: a balance is never spent in process. Ask again shortly.
        unavailable++;
        await sleep(50);
      } else {
        unexpected.push(`${status} ${JSON.stringify(body)}`);
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  await restarted;

  const forwarded = backend.received
    .filter((r) => r.headers['x-consumer-api-key-id'] !== undefined)
    .reduce((units, r) => units + COSTS[r.url.slice(0, r.url.lastIndexOf('/'))]!, 0);
  const shown = await Promise.all(
    members.map(
      async (t) => (await t.admin('GET', `/tollgate/consumers/${consumerId}`)).body.credits.remaining,
    ),
  );
  console.log(
    `credits: ${admittedUnits} units admitted, ${refusals.length} refused, ${unavailable} answered 503 while Redis was down`,
  );
  expect({ unexpected, restarted: restarted !== undefined }).toEqual({ unexpected: [], restarted: true });
  expect(unavailable).toBeGreaterThan(0);
  expect({ admittedUnits, forwarded, shown }).toEqual({
    admittedUnits: BALANCE,
    forwarded: BALANCE,
    shown: [0, 0, 0],
  });
  // Never below 0, and every refusal was right: the balance held less than the cost.
  for (const { remaining, cost } of refusals) {
    expect(remaining).toBeGreaterThanOrEqual(0);
    expect(remaining).toBeLessThan(cost);
  }

  // The database holds it too (each replica saves what it saw about once a second).
  const client2 = new pg.Client({ connectionString: database.url });
  await client2.connect();
  try {
    const saved = await waitFor(
      async () =>
        (
          await client2.query<{ left: string }>(
            'select credits_granted - credits_spent as left from consumers where id = $1',
            [consumerId],
          )
        ).rows[0]!.left,
      (left) => Number(left) === 0,
      { timeoutMs: 5_000 },
    );
    expect(Number(saved.value)).toBe(0);
  } finally {
    await client2.end();
  }
}, 180_000);
