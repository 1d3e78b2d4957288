/**
 * A token bucket and a concurrency limit through faults, on three built replicas and a private
 * redis-server (docs/decisions/0125, docs/guides/plans.md): Redis hung (SIGSTOP) and back, a replica
 * SIGKILLed, FLUSHALL, under load, and a replica SIGTERMed while it holds every place. The bucket admits no more than `burst + limit × T / period`
 * over the test's interval, as the recording backend counts what reached it, and never more than the
 * limit's requests are in flight, as the holding backend counts them. Time is the replicas' test
 * clock: a bucket refills by it, moved rather than waited for.
 */
import { Redis } from 'ioredis';
import { RedisServer } from '../helpers/redis-server.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { routedToHolding, startHoldingBackend, type HoldingBackend } from './helpers/holding-backend.js';
import {
  hit,
  hitFull,
  keyWithPlan,
  metric,
  sleep,
  startFleet,
  waitFor,
  type Fleet,
} from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

const DEGRADED = 'tollgate_degraded{dependency="redis"}';
/** One unit a minute: the seconds the test itself takes never refill a whole one unnoticed. */
const RATE_PER_HOUR = 60;
const BURST = 10;
const PLACES = 3;

let fleet: Fleet;
let redis: RedisServer;
/** The test's own connection to the private redis-server, which flushes it. */
let flusher: Redis;
let holding: HoldingBackend;
const clock = new TestClock();

beforeAll(async () => {
  [redis, holding] = await Promise.all([RedisServer.start(), startHoldingBackend()]);
  flusher = new Redis(redis.url);
  // REDIS_FAILURE_MODE=open (the default): while Redis is away each replica limits alone, in process.
  // Away means a command unanswered for 2 s: the hang below is longer, while a replica starved of CPU
  // on a loaded machine, reading a prompt answer late, does not limit alone and admit past the count
  // the FLUSHALL and SIGKILL proofs check (decision record 0230).
  fleet = await startFleet(3, {
    ...clock.env,
    REDIS_URL: redis.url,
    REDIS_FAILURE_MODE: 'open',
    REDIS_COMMAND_TIMEOUT_MS: '2000',
  });
  const [admin] = fleet.members;
  const route = await admin!.admin('POST', '/tollgate/routes', {
    routeId: 'held',
    match: { pathPrefix: '/v1/held' },
    upstreamUrl: holding.url,
  });
  expect(route.status).toBe(201);
}, 120_000);

afterAll(async () => {
  redis?.resume();
  await flusher?.quit();
  holding?.release();
  await fleet?.stop();
  await holding?.close();
  await redis?.destroy();
}, 60_000);

/** A key with a token bucket and one with a concurrency limit, created through the first replica. */
async function keys(name: string) {
  const [admin] = fleet.members;
  const keyOf = async (suffix: string, limits: unknown[]) => {
    const rateLimitId = `${name}-${suffix}`;
    expect((await admin!.admin('POST', '/rate-limit/create', { rateLimitId, limits })).status).toBe(201);
    const key = await keyWithPlan(admin!, rateLimitId);
    const bound = await admin!.admin('POST', '/api-keys/apply-rate-limit', {
      consumerApiKeyId: key.id,
      rateLimitId,
    });
    expect(bound.status).toBe(200);
    return key;
  };
  const bucket = await keyOf('bucket', [
    { limit: RATE_PER_HOUR, period: 'hour', algorithm: 'tokenBucket', burst: BURST },
  ]);
  const places = await keyOf('places', [{ limit: PLACES, algorithm: 'concurrency' }]);
  return { bucket, places };
}

/** The fleet's three replicas, one a test SIGKILLed replaced by a new one. */
async function threeAlive(): Promise<Tollgate[]> {
  for (const [i, member] of fleet.members.entries())
    if (member.process.exitCode !== null || member.process.signalCode !== null)
      fleet.members[i] = (await fleet.replicas.start(1))[0]!;
  return fleet.members;
}

/** Requests of the bucket key on `path` that reached the backend. */
const reached = (path: string) => fleet.backend.received.filter((r) => r.url.startsWith(path)).length;

/** What the bucket may admit from `since` to now, on the replicas' clock. */
const allowedSince = (since: number) => BURST + (RATE_PER_HOUR * (clock.now() - since)) / (60 * MINUTE_MS);

/** Places free now, as a replica reads them from Redis (the key's detail). */
async function freePlaces(via: Tollgate, keyId: string): Promise<number> {
  const detail = await via.admin('GET', `/consumer-api-key/${keyId}`);
  return (detail.body as { usage: { rateLimits: { limits: { remaining: number }[] } } }).usage.rateLimits
    .limits[0]!.remaining;
}

/** A concurrency limit's places as Redis holds them for `keyId`: each replica's, and their expiry. */
async function placesCounted(keyId: string): Promise<Record<string, string>[]> {
  const counts = (await flusher.keys('*concurrency*')).filter((count) => count.includes(keyId));
  return Promise.all(counts.map((count) => flusher.hgetall(count)));
}

/**
 * Clients sending requests through `via` in turn until stopped: held ones (each held until the test
 * answers it), bucket ones, or both. Resolves when every client has stopped.
 */
function load(via: () => readonly Tollgate[], send: (t: Tollgate) => Promise<unknown>, clients: number) {
  let running = true;
  const client = async (n: number) => {
    for (let i = n; running; i++) {
      const members = via();
      await send(members[i % members.length]!);
      await sleep(20);
    }
  };
  const done = Promise.all(Array.from({ length: clients }, (_, n) => client(n)));
  return {
    stop: async () => {
      running = false;
      await done;
    },
  };
}

it('after Redis hangs and comes back, the bucket refills exactly and every place is free again', async () => {
  const members = await threeAlive();
  const { bucket, places } = await keys('hang');
  await routedToHolding(members, places.secret, holding);
  holding.countMostFromNow();
  const start = clock.now();
  // The bucket drained, and two places held, before the hang.
  const before = await Promise.all(
    Array.from({ length: 20 }, (_, i) => hit(members[i % 3]!, bucket.secret, '/v1/bucket-hang/before')),
  );
  expect(before.filter((s) => s === 200)).toHaveLength(BURST);
  const held = [
    hitFull(members[0]!, places.secret, '/v1/held'),
    hitFull(members[1]!, places.secret, '/v1/held'),
  ];
  await waitFor(
    async () => holding.holding,
    (n) => n === 2,
  );

  redis.pause();
  // The two requests end while Redis does not answer: their places cannot be given back now.
  holding.release();
  expect((await Promise.all(held)).map((a) => a.status)).toEqual([200, 200]);
  // A held request through each replica: its call times out, and each replica limits alone, in process.
  // Held on purpose through the rest of the hang (its checks, 45 requests, 2 s): longer than the 10 s a
  // request is given by default on a loaded machine.
  const during = members.map((m) => hitFull(m, places.secret, '/v1/held', 60_000));
  await waitFor(
    async () => holding.holding,
    (n) => n === 3,
  );
  for (const m of members) expect(await metric(m, DEGRADED)).toBe(1);
  const alone = await Promise.all(
    Array.from({ length: 45 }, (_, i) => hit(members[i % 3]!, bucket.secret, '/v1/bucket-hang/during')),
  );
  // Each replica's own bucket: its burst, no more.
  expect(alone.filter((s) => s === 200).length).toBeLessThanOrEqual(3 * BURST);
  await sleep(2_000);
  redis.resume();
  holding.release();
  expect((await Promise.all(during)).map((a) => a.status)).toEqual([200, 200, 200]);
  for (const m of members)
    expect(
      (
        await waitFor(
          () => metric(m, DEGRADED),
          (v) => v === 0,
        )
      ).value,
    ).toBe(0);

  // Every place is free again: none left to the lease by the releases and calls Redis did not answer.
  const free = await waitFor(
    () => freePlaces(members[0]!, places.id),
    (n) => n === PLACES,
    { timeoutMs: 5_000 },
  );
  expect(free.value).toBe(PLACES);
  let refused = 0;
  const wave = Array.from({ length: 9 }, (_, i) =>
    hitFull(members[i % 3]!, places.secret, '/v1/held').then((answer) => {
      if (answer.status === 429) refused++;
      return answer;
    }),
  );
  await waitFor(
    async () => holding.holding,
    (n) => n === PLACES,
  );
  // The rest refused before the held ones end: one decided later (a loaded machine) would take a
  // place they free, and wait at the backend for a release that never comes.
  await waitFor(
    async () => refused,
    (n) => n === 9 - PLACES,
  );
  holding.release();
  const statuses = (await Promise.all(wave)).map((a) => a.status);
  expect(statuses.filter((s) => s === 200)).toHaveLength(PLACES);
  expect(statuses.filter((s) => s === 429)).toHaveLength(9 - PLACES);

  // Redis' bucket is as the hang left it: three minutes refill three units, across the replicas.
  clock.advance(3 * MINUTE_MS);
  const after = await Promise.all(
    Array.from({ length: 20 }, (_, i) => hit(members[i % 3]!, bucket.secret, '/v1/bucket-hang/after')),
  );
  const admitted = reached('/v1/bucket-hang/before') + reached('/v1/bucket-hang/after');
  console.log(
    `hang: bucket admitted ${admitted} through Redis of ${allowedSince(start).toFixed(2)} allowed ` +
      `(${reached('/v1/bucket-hang/during')} by the replicas alone during the hang); ` +
      `${free.value} of ${PLACES} places free after it`,
  );
  expect(after.filter((s) => s === 200)).toHaveLength(3);
  expect(admitted).toBeLessThanOrEqual(allowedSince(start));
  expect(holding.most).toBeLessThanOrEqual(PLACES);
}, 120_000);

it('with a replica SIGKILLed under load, then FLUSHALL, the bucket admits no more than allowed and no more than the limit are in flight', async () => {
  const [victim, ...survivors] = (await threeAlive()) as [Tollgate, Tollgate, Tollgate];
  const { bucket, places } = await keys('kill');
  await routedToHolding(fleet.members, places.secret, holding);
  holding.countMostFromNow();
  const start = clock.now();
  // Each replica holds one place: the limit is reached.
  const held = fleet.members.map((m) => hitFull(m, places.secret, '/v1/held').catch(() => undefined));
  await waitFor(
    async () => holding.holding,
    (n) => n === PLACES,
  );
  const alive = [...fleet.members];
  const bucketLoad = load(
    () => alive,
    (t) => hit(t, bucket.secret, '/v1/bucket-kill'),
    6,
  );
  await waitFor(
    async () => reached('/v1/bucket-kill'),
    (n) => n >= BURST / 2,
  );
  victim.process.kill('SIGKILL');
  await new Promise((resolve) => victim.process.once('exit', resolve));
  alive.splice(alive.indexOf(victim), 1);
  // Its request closed with it; its place is still counted until its lease ends.
  await waitFor(
    async () => holding.holding,
    (n) => n === PLACES - 1,
  );
  expect((await hitFull(survivors[0], places.secret, '/v1/held')).status).toBe(429);
  // The survivors keep asking: the bucket holds what they last saw.
  await sleep(500);

  await flusher.flushall();
  // The survivors put back their own places; the victim's are gone with Redis' copy (back early, never late).
  const wave = Array.from({ length: 6 }, (_, i) =>
    hitFull(survivors[i % 2]!, places.secret, '/v1/held').catch(() => undefined),
  );
  await waitFor(
    async () => holding.holding,
    (n) => n === PLACES,
  );
  await sleep(1_000);
  const mostInFlight = holding.holding;
  await sleep(500);
  await bucketLoad.stop();
  holding.release();
  await Promise.all([...held, ...wave]);
  const admitted = reached('/v1/bucket-kill');
  console.log(
    `SIGKILL then FLUSHALL under load: bucket admitted ${admitted} of ${allowedSince(start).toFixed(2)} allowed; ` +
      `${holding.most} in flight at most of ${PLACES}`,
  );
  expect(admitted).toBeLessThanOrEqual(allowedSince(start));
  expect(mostInFlight).toBe(PLACES);
  expect(holding.most).toBeLessThanOrEqual(PLACES);
}, 120_000);

it('FLUSHALL under load admits no more than the burst and refill, and never more than the limit in flight', async () => {
  const members = await threeAlive();
  const { bucket, places } = await keys('flush');
  await routedToHolding(members, places.secret, holding);
  holding.countMostFromNow();
  const start = clock.now();
  const bucketLoad = load(
    () => members,
    (t) => hit(t, bucket.secret, '/v1/bucket-flush'),
    6,
  );
  // Held requests from every replica; the test answers one every 30 ms, so places keep changing hands.
  const placeLoad = load(
    () => members,
    (t) => hitFull(t, places.secret, '/v1/held').catch(() => undefined),
    9,
  );
  let answering = true;
  const answerer = (async () => {
    while (answering) {
      // Answered from the limit up: more in flight than the limit, which the test refuses below, must
      // not stall the load instead.
      if (holding.holding >= PLACES) holding.release(1);
      await sleep(30);
    }
  })();
  let flushedAt: number;
  let afterFlushMs: number;
  // Whatever happens, the loads end here: left running, they would take the next test's places.
  try {
    await waitFor(
      async () => reached('/v1/bucket-flush'),
      (n) => n >= BURST,
    );
    flushedAt = holding.received;
    await flusher.flushall();
    // Under load until every replica has put back, and well after. The value seen holds the places
    // held at the backend, as Redis counts them, whether each replica is still up and its last
    // warnings, so that a wait that runs out tells a place counted by nobody from a replica gone.
    ({ ms: afterFlushMs } = await waitFor(
      async () => ({
        received: holding.received,
        holding: holding.holding,
        counted: await placesCounted(places.id),
        up: members.map((m) => m.process.exitCode === null && m.process.signalCode === null),
        warned: members.map((m) => m.output.filter((line) => /"level":[4-6]0/.test(line)).slice(-3)),
      }),
      (seen) => seen.received >= flushedAt + 20,
      { timeoutMs: 30_000, what: `20 held requests after the ${flushedAt} before the flush` },
    ));
    await sleep(1_500);
  } finally {
    answering = false;
    await answerer;
    holding.release();
    await bucketLoad.stop();
    const stopPlaces = placeLoad.stop();
    // Clients still sending are answered as the backend lets them go.
    while (await Promise.race([stopPlaces.then(() => false), sleep(50).then(() => true)])) holding.release();
  }
  const most = holding.most;
  const admitted = reached('/v1/bucket-flush');
  console.log(
    `FLUSHALL under load: bucket admitted ${admitted} of ${allowedSince(start).toFixed(2)} allowed; ` +
      `${most} in flight at most of ${PLACES} (${holding.received - flushedAt} held requests after the flush, ` +
      `the first 20 in ${Math.round(afterFlushMs)} ms)`,
  );
  expect(admitted).toBeLessThanOrEqual(allowedSince(start));
  expect(most).toBeLessThanOrEqual(PLACES);
}, 120_000);

it('a replica SIGTERMed while holding every place answers them, gives them back as it leaves, and the bucket it drew from stays drawn', async () => {
  const [staying, , leaving] = (await threeAlive()) as [Tollgate, Tollgate, Tollgate];
  const { bucket, places } = await keys('term');
  await routedToHolding(fleet.members, places.secret, holding);
  const drawn = await Promise.all(
    Array.from({ length: 15 }, () => hit(leaving, bucket.secret, '/v1/bucket-term/before')),
  );
  expect(drawn.filter((s) => s === 200)).toHaveLength(BURST);
  holding.countMostFromNow();
  const held = Array.from({ length: PLACES }, () => hitFull(leaving, places.secret, '/v1/held'));
  await waitFor(
    async () => holding.holding,
    (n) => n === PLACES,
  );
  const exited = new Promise<number | null>((resolve) => leaving.process.once('exit', resolve));
  leaving.process.kill('SIGTERM');
  // While it drains, its places are still taken.
  expect((await hitFull(staying, places.secret, '/v1/held')).status).toBe(429);
  holding.release();
  expect((await Promise.all(held)).map((a) => a.status)).toEqual([200, 200, 200]);
  expect(await exited).toBe(0);
  // Given back as it left, long before the lease (30 s): the replica that stays takes every one.
  expect(await freePlaces(staying, places.id)).toBe(PLACES);
  const after = Array.from({ length: PLACES }, () => hitFull(staying, places.secret, '/v1/held'));
  await waitFor(
    async () => holding.holding,
    (n) => n === PLACES,
  );
  expect((await hitFull(staying, places.secret, '/v1/held')).status).toBe(429);
  holding.release();
  expect((await Promise.all(after)).map((a) => a.status)).toEqual([200, 200, 200]);
  expect(holding.most).toBeLessThanOrEqual(PLACES);
  // What the leaving replica drew from the bucket stays drawn on those that stay.
  expect(await hit(staying, bucket.secret, '/v1/bucket-term/after')).toBe(429);
}, 120_000);
