/**
 * The cost figures of Redis-and-Postgres mode, measured on three built replicas under proxied load
 * (FIGURES_REQUESTS, default 2000: the suite's budget; the closing note's figures use 10000) and
 * printed for the closing note:
 *   - Redis commands per proxied request: INFO commandstats of a private redis-server (CONFIG RESETSTAT
 *     first), which counts the commands a script runs as well as the script call, and MONITOR, which
 *     tells the commands replicas send (round trips) from those scripts run inside Redis;
 *   - Postgres writes per 10,000 proxied requests: pg_stat_database deltas of the test database
 *     (tuples inserted + updated + deleted, and committed transactions), read once the replicas exited
 *     (a backend reports its last counts when it ends).
 * Reproduce: npm run build && FIGURES_REQUESTS=10000 node_modules/.bin/node --experimental-vm-modules \
 *   node_modules/jest/bin/jest.js tests/e2e/replicas-figures.test.ts
 * The assertions are generous ceilings, so a regression (a second round trip per request, a write per
 * request) fails the suite.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { RedisMonitor } from '../helpers/redis-monitor.js';
import { RedisServer } from '../helpers/redis-server.js';
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit, keyWithPlan, Replicas, sleep } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';

const REQUESTS = Number(process.env.FIGURES_REQUESTS ?? 2_000);
const PATHS = 5;
const CONCURRENCY = 48;

let backend: Backend;
let redis: RedisServer;
let redisClient: Redis;
let monitor: RedisMonitor | undefined;
let database: TestDatabase;
let replicas: Replicas;

beforeAll(async () => {
  [backend, redis, database] = await Promise.all([startBackend(), RedisServer.start(), createTestDatabase()]);
  redisClient = new Redis(redis.url);
  replicas = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: testKeyPrefix(),
    UPSTREAM_URL: backend.url,
  });
}, 60_000);

afterAll(async () => {
  await replicas?.stopAll();
  monitor?.close();
  redisClient?.disconnect();
  await backend?.close();
  await redis?.destroy();
  await database?.drop();
  if (replicas?.all.length) expectNoSecretsLogged();
}, 60_000);

interface DbStats {
  writes: number;
  commits: number;
}

async function databaseStats(): Promise<DbStats> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ writes: string; commits: string }>(
      `select (tup_inserted + tup_updated + tup_deleted)::text as writes, xact_commit::text as commits
         from pg_stat_database where datname = current_database()`,
    );
    return { writes: Number(rows[0]!.writes), commits: Number(rows[0]!.commits) };
  } finally {
    await client.end();
  }
}

/** `cmdstat_<name>:calls=N,...` lines of INFO commandstats as name → calls. */
async function commandCalls(): Promise<Record<string, number>> {
  const info = await redisClient.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]!] = Number(match[2]);
  return calls;
}

/** `total` requests over the replicas, `CONCURRENCY` at a time; resolves the statuses seen. */
async function load(
  targets: readonly Tollgate[],
  secret: string,
  total: number,
): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < total) {
        const i = next++;
        const status = await hit(targets[i % targets.length]!, secret, `/v1/cost/${i % PATHS}`);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  return statuses;
}

it('measures Redis commands per proxied request and Postgres writes per 10,000 proxied requests', async () => {
  // Set-up (migrations, key, plan, warm caches) happens in a first life of the replicas; their exit
  // reports its database counts before the measurement starts.
  let live = await replicas.start(3);
  const key = await keyWithPlan(live[0]!, 'cost', 1_000_000);
  await replicas.stopAll();
  await sleep(500);
  const dbBefore = await databaseStats();

  live = await replicas.start(3);
  for (const t of live) expect(await hit(t, key.secret, '/v1/warm')).toBe(200);
  await sleep(1_500);
  // Every command Redis runs from now on, on a connection of its own (closed here or in afterAll):
  // the replicas are busy, so MONITOR's lines start at once (see RedisMonitor for ioredis' monitor()).
  monitor = await RedisMonitor.start(redis.url);
  await redisClient.config('RESETSTAT');

  const dbStarted = await databaseStats();
  const started = performance.now();
  const statuses = await load(live, key.secret, REQUESTS);
  const seconds = (performance.now() - started) / 1000;
  const calls = await commandCalls();
  // What the replicas wrote while the load ran, before their last flushes at SIGTERM.
  const dbLoaded = await databaseStats();
  monitor.close();
  // What replicas sent (round trips), by name; commands their scripts ran inside Redis are apart.
  const sent = monitor.counts(false);
  // SIGTERM: every replica pushes its last usage and the flushers move it to Postgres before exiting.
  await replicas.stopAll();
  await sleep(500);
  const dbAfter = await databaseStats();

  // A request lost to a starved CI machine (status 0: no answer within 10 s) only blurs the figures a little.
  expect(statuses.get(200) ?? 0).toBeGreaterThanOrEqual(REQUESTS * 0.99);
  expect([...statuses.keys()].filter((s) => s !== 200 && s !== 0)).toEqual([]);
  for (const own of ['config|resetstat', 'info']) delete calls[own];
  for (const own of ['config', 'info']) delete sent[own];
  const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .sort((a, b) => b[1] - a[1])
      .map(([name, n]) => `${name} ${n}`)
      .join(', ');
  const per = (n: number) => (n / REQUESTS).toFixed(3);
  const writes = dbAfter.writes - dbBefore.writes;
  const commits = dbAfter.commits - dbBefore.commits;
  const per10k = (n: number) => Math.round((n * 10_000) / REQUESTS);
  console.log(
    [
      `${REQUESTS} proxied requests (statuses ${JSON.stringify(Object.fromEntries(statuses))}, one limited key, ${PATHS} paths) over 3 replicas in ${seconds.toFixed(1)} s (${Math.round(REQUESTS / seconds)}/s, ${CONCURRENCY} concurrent):`,
      `  Redis commands sent per proxied request: ${per(sum(sent))} (${sum(sent)}: ${list(sent)}; background pushes, flush locks and flushes included)`,
      `  Redis commands executed per proxied request (INFO commandstats, script internals included): ${per(sum(calls))} (${sum(calls)}: ${list(calls)})`,
      `  Postgres writes: ${writes} tuples inserted/updated/deleted in ${commits} committed transactions` +
        ` = ${per10k(writes)} tuples and ${per10k(commits)} transactions per 10,000 proxied requests at this rate` +
        ` (${(writes / seconds).toFixed(1)} tuples/s: usage reaches Postgres in one batch a second, not per request)`,
    ].join('\n'),
  );

  // At most one script call per limited request (requests a replica admits in one turn share one),
  // plus background work per second, not per request.
  expect(sent.evalsha ?? 0).toBeGreaterThan(0);
  expect(sent.evalsha ?? 0).toBeLessThanOrEqual(REQUESTS);
  expect(sum(sent) / REQUESTS).toBeLessThan(1.5);
  // Usage reaches Postgres in per-second batches: the writes of the run follow the seconds it took, not
  // its requests (a starved machine that serves 40 requests a second writes as much per second as one
  // that serves 4,000). Each of the 3 replicas sends a batch a second, of about 20 tuples: totals, 5
  // endpoints by day and by month, buckets, last use, its batch id; 25 a batch leaves room for the
  // background writes of a second (a run of 2,000 requests written per request would be thousands).
  expect(dbLoaded.writes - dbStarted.writes).toBeLessThan(25 * 3 * (seconds + 1));
}, 180_000);
