/**
 * The failure log is counted once, as usage is (docs/decisions/0084-failure-log.md, 0115): three built
 * replicas on a private redis-server under load from four keys, half of whose requests fail (a
 * backend's 503). Redis is paused (SIGSTOP) for 8 s and resumed, then one replica is SIGKILLed.
 * Afterwards no request id is listed twice, each listed one is a failure a client got with that
 * status, and each key's listed entries plus `leftOut` equal its failed requests as usage counts
 * them, and the failures the clients got but for what the killed replica answered in its last second.
 */
import { Redis } from 'ioredis';
import { RedisServer } from '../helpers/redis-server.js';
import { testKeyPrefix } from '../helpers/services.js';
import { fetchWithin, keyWithPlan, sleep, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';
import { flushedEverywhere, usageDrained } from './helpers/usage-flushed.js';

let redis: RedisServer;
let fleet: Fleet;
/** Reads whether Redis still holds usage for Postgres. */
let drained: Redis;
const prefix = testKeyPrefix();

beforeAll(async () => {
  // A redis-server of its own, which the test pauses.
  redis = await RedisServer.start();
  drained = new Redis(redis.url);
  fleet = await startFleet(3, { REDIS_URL: redis.url, REDIS_KEY_PREFIX: prefix });
}, 60_000);

afterAll(async () => {
  redis?.resume();
  drained?.disconnect();
  await fleet?.stop();
  await redis?.destroy();
}, 60_000);

/** A failure a client got: its request id and status, and when the answer came (performance.now()). */
interface Seen {
  readonly requestId: string;
  readonly status: number;
  readonly at: number;
  readonly killed: boolean;
}

interface Failure {
  requestId: string;
  status: number;
}

/** A key's whole log as one replica reads it, a page of 1,000 at a time. */
async function logOf(t: Tollgate, keyId: string): Promise<{ failures: Failure[]; leftOut: number }> {
  const failures: Failure[] = [];
  let cursor = '';
  for (;;) {
    const page = await t.admin('GET', `/consumer-api-key/${keyId}/failures?limit=1000${cursor}`);
    expect(page.status).toBe(200);
    failures.push(...(page.body.failures as Failure[]));
    if (page.body.nextCursor === undefined) return { failures, leftOut: page.body.leftOut as number };
    cursor = `&cursor=${page.body.nextCursor as string}`;
  }
}

it('lists each failure once, or counts it in leftOut once, through a Redis hang and a SIGKILL', async () => {
  const [a, b, c] = fleet.members as [Tollgate, Tollgate, Tollgate];
  const keys = await Promise.all([0, 1, 2, 3].map((i) => keyWithPlan(a, `failing-${i}`)));
  const seen = keys.map((): Seen[] => []);
  let running = true;
  const loop = async (t: Tollgate, n: number) => {
    for (let i = 0; running && t.process.exitCode === null && t.process.signalCode === null; i++) {
      const k = (i + n) % keys.length;
      const path = i % 2 === 0 ? '/status/503' : '/v1/items';
      const answer = await fetchWithin(
        t.url + path,
        { headers: { authorization: `Bearer ${keys[k]!.secret}` } },
        async (res) => {
          await res.arrayBuffer();
          return { status: res.status, requestId: res.headers.get('x-request-id')! };
        },
      ).catch(() => undefined);
      if (answer !== undefined && answer.status >= 400)
        seen[k]!.push({ ...answer, at: performance.now(), killed: t === c });
      await sleep(2);
    }
  };
  const loops = [a, b, c, a, b, c].map(loop);
  await sleep(1_000);
  redis.pause();
  await sleep(8_000);
  redis.resume();
  await sleep(2_000);
  const killedAt = performance.now();
  c.process.kill('SIGKILL');
  await sleep(1_500);
  running = false;
  await Promise.all(loops);

  // Until what the survivors hold has reached Postgres (the killed replica may have held the flush
  // lock: up to its 10 s expiry): each key's log accounts for every failure its usage counts, and
  // stays so.
  const failedOf = async (keyId: string) =>
    (await b.admin('GET', `/consumer-api-key/${keyId}`)).body.usage.failedRequests as number;
  const agree = async () => {
    for (const key of keys) {
      const log = await logOf(b, key.id);
      if (log.failures.length + log.leftOut !== (await failedOf(key.id))) return false;
    }
    return true;
  };
  await waitFor(agree, (yes) => yes, { timeoutMs: 30_000, everyMs: 1_000 });
  // Stays so: once the survivors have handed over all they held and Redis has moved it to Postgres.
  await flushedEverywhere([a, b], b);
  await waitFor(
    () => usageDrained(drained, prefix),
    (d) => d,
    { timeoutMs: 30_000, everyMs: 250, what: 'the usage in Redis all moved to Postgres' },
  );

  // What the killed replica answered in its last second may be lost, give or take its flush timer.
  const TIMER_LATENESS_MS = 100;
  const all = seen.flat();
  const lastSecond = all.filter((s) => s.killed && s.at > killedAt - 1_000 - TIMER_LATENESS_MS).length;
  let missing = 0;
  for (const [k, key] of keys.entries()) {
    const log = await logOf(a, key.id);
    const ids = log.failures.map((f) => f.requestId);
    expect(new Set(ids).size).toBe(ids.length);
    const got = new Map(seen[k]!.map((s) => [s.requestId, s.status]));
    // Nothing invented: each listed failure is one this key's client got, with the status it got.
    expect(log.failures.filter((f) => got.get(f.requestId) !== f.status)).toEqual([]);
    const failed = await failedOf(key.id);
    // The log and the counts ride the same batches: they agree exactly.
    expect(log.failures.length + log.leftOut).toBe(failed);
    expect(failed).toBeLessThanOrEqual(seen[k]!.length);
    missing += seen[k]!.length - failed;
    console.log(
      `key ${k}: ${seen[k]!.length} failures answered, ${log.failures.length} listed + ${log.leftOut} left out`,
    );
  }
  console.log(
    `${all.length} failures answered, ${missing} missing, killed replica's last second ${lastSecond}`,
  );
  expect(all.filter((s) => s.killed).length).toBeGreaterThan(lastSecond);
  expect(missing).toBeLessThanOrEqual(lastSecond);
}, 120_000);
