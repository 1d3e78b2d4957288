/**
 * Concurrency limits across three built replicas on Redis and Postgres (docs/guides/plans.md), in front
 * of a backend that holds requests open and counts them: never more in flight than the limit, places a
 * replica keeps idle in its pool (docs/decisions/0209) taken by another that needs them; and a replica
 * SIGKILLed while it holds places, idle ones too: the other replicas keep counting them until its lease
 * (CONCURRENCY_LEASE_SECONDS) runs out, and not a moment longer, on the replicas' test clock (moved by
 * the lease, never waited for).
 */
import { TestClock } from '../helpers/test-clock.js';
import { startHoldingBackend, type HoldingBackend } from './helpers/holding-backend.js';
import { hitFull, keyWithPlan, startFleet, waitFor, type Fleet } from './helpers/replicas.js';

/** Long enough that a replica's renewals, late on a machine loaded by other tests, never miss one: moved, not waited for. */
const LEASE_SECONDS = 10;
/** Requests the backend holds stay open this long at most (a loaded machine answers slowly). */
const HELD_MS = 60_000;
/** A limit whose pools lease places ahead (a quarter of those left at most). */
const LIMIT = 12;
let fleet: Fleet;
let holding: HoldingBackend;
const clock = new TestClock();

beforeAll(async () => {
  holding = await startHoldingBackend();
  fleet = await startFleet(3, {
    ...clock.env,
    UPSTREAM_URL: holding.url,
    CONCURRENCY_LEASE_SECONDS: String(LEASE_SECONDS),
  });
}, 120_000);

afterAll(async () => {
  holding?.release();
  await fleet?.stop();
  await holding?.close();
}, 60_000);

type Member = Fleet['members'][number];

/** A key bound to a plan of LIMIT places, created through `admin`. */
async function keyOfPlaces(admin: Member, name: string): Promise<{ id: string; secret: string }> {
  const rateLimitId = `${name}-places`;
  const created = await admin.admin('POST', '/rate-limit/create', {
    rateLimitId,
    limits: [{ limit: LIMIT, algorithm: 'concurrency' }],
  });
  expect(created.status).toBe(201);
  const key = await keyWithPlan(admin, name);
  const bound = await admin.admin('POST', '/api-keys/apply-rate-limit', {
    consumerApiKeyId: key.id,
    rateLimitId,
  });
  expect(bound.status).toBe(200);
  return key;
}

/** Places free as the key detail reads them from Redis through `via` (idle places of a pool are not free). */
async function free(via: Member, keyId: string): Promise<number> {
  const detail = await via.admin('GET', `/consumer-api-key/${keyId}`);
  return (detail.body as { usage: { rateLimits: { limits: { remaining: number }[] } } }).usage.rateLimits
    .limits[0]!.remaining;
}

/**
 * `n` requests of `secret` at once through `via`: once every one is either held by the backend or
 * answered, how many the backend holds of them and the statuses answered; `all` resolves every answer.
 */
async function wave(via: Member, secret: string, n: number) {
  const before = holding.holding;
  const answered: number[] = [];
  const all = Array.from({ length: n }, () =>
    hitFull(via, secret, '/v1/infer', HELD_MS).then((r) => {
      answered.push(r.status);
      return r.status;
    }),
  );
  await waitFor(
    async () => holding.holding - before + answered.length,
    (settled) => settled === n,
  );
  return { held: holding.holding - before, answered, all: Promise.all(all) };
}

/** `n` requests of `secret` through `via`, one by one, each sent once the one before is held by the backend. */
async function holdOneByOne(via: Member, secret: string, n: number): Promise<Promise<number | undefined>[]> {
  const held: Promise<number | undefined>[] = [];
  for (let i = 1; i <= n; i++) {
    held.push(
      hitFull(via, secret, '/v1/infer', HELD_MS).then(
        (r) => r.status,
        () => undefined,
      ),
    );
    await waitFor(
      async () => holding.holding,
      (now) => now === i,
    );
  }
  return held;
}

/** SIGKILLs `victim`, whose requests `held` are held by the backend: once they are gone, nothing is in flight. */
async function kill(victim: Member, held: readonly Promise<unknown>[]): Promise<void> {
  victim.process.kill('SIGKILL');
  await new Promise((resolve) => victim.process.once('exit', resolve));
  await Promise.all(held);
  // Its connections to the backend closed with it.
  await waitFor(
    async () => holding.holding,
    (n) => n === 0,
  );
}

it("never lets more than its limit in flight, and gives one replica's idle places to another that needs them", async () => {
  const [a, b, c] = fleet.members as [Member, Member, Member];
  const { id, secret } = await keyOfPlaces(a, 'pools');
  holding.countMostFromNow();
  // One by one on a: its pool leases places ahead, which it keeps idle once its four are held.
  const first = await holdOneByOne(a, secret, 4);
  // b is refused places a keeps idle: a gives them back, and b gets exactly the rest of the limit.
  const onB = await wave(b, secret, LIMIT);
  expect(onB.held).toBe(LIMIT - 4);
  expect(onB.answered).toEqual([429, 429, 429, 429]);
  // Full: refused on every replica.
  for (const via of [a, b, c]) expect((await hitFull(via, secret, '/v1/infer')).status).toBe(429);
  expect(holding.most).toBe(LIMIT);
  holding.release();
  expect(await Promise.all(first)).toEqual([200, 200, 200, 200]);
  expect((await onB.all).filter((s) => s === 200)).toHaveLength(LIMIT - 4);
  // Every request ended: their places are back in Redis (a pool not used for a second gives its idle
  // ones back), and c gets all of them.
  await waitFor(
    () => free(c, id),
    (n) => n === LIMIT,
  );
  holding.countMostFromNow();
  const onC = await wave(c, secret, LIMIT + 3);
  expect(onC.held).toBe(LIMIT);
  expect(onC.answered).toEqual([429, 429, 429]);
  expect(holding.most).toBe(LIMIT);
  holding.release();
  await onC.all;
}, 120_000);

it("gives a SIGKILLed replica's places back within the lease", async () => {
  const [victim, other, third] = fleet.members as [
    (typeof fleet.members)[number],
    (typeof fleet.members)[number],
    (typeof fleet.members)[number],
  ];
  const created = await victim.admin('POST', '/rate-limit/create', {
    rateLimitId: 'three-in-flight',
    limits: [{ limit: 3, algorithm: 'concurrency' }],
  });
  expect(created.status).toBe(201);
  const key = await keyWithPlan(victim, 'gpu');
  expect(
    (
      await victim.admin('POST', '/api-keys/apply-rate-limit', {
        consumerApiKeyId: key.id,
        rateLimitId: 'three-in-flight',
      })
    ).status,
  ).toBe(200);
  const send = (via: typeof victim) => hitFull(via, key.secret, '/v1/infer', HELD_MS).catch(() => undefined);

  // The victim holds all three places, its requests held open by the backend.
  const held = [send(victim), send(victim), send(victim)];
  await waitFor(
    async () => holding.holding,
    (n) => n === 3,
  );
  expect((await send(other))!.status).toBe(429);

  // Nothing is in flight once it died, but its places are still counted.
  await kill(victim, held);
  const stillHeld = await send(third);
  expect(stillHeld!.status).toBe(429);
  expect(stillHeld!.body.code).toBe('concurrency_limit_exceeded');

  // The lease runs out (its last renewal was at most a lease ahead of the clock): the places are back.
  clock.advance(LEASE_SECONDS * 1_000);
  const again = [send(other), send(third), send(other)];
  await waitFor(
    async () => holding.holding,
    (n) => n === 3,
  );
  expect((await send(third))!.status).toBe(429);
  holding.release();
  expect((await Promise.all(again)).map((a) => a!.status)).toEqual([200, 200, 200]);
}, 120_000);

it("gives a SIGKILLed replica's places back, idle ones too, after the lease", async () => {
  // The first member died in the test before: this one dies now, beside a replica started for it.
  const [, victim, other] = fleet.members as [Member, Member, Member];
  const [third] = (await fleet.replicas.start(1)) as [Member];
  const { id, secret } = await keyOfPlaces(other, 'pool-victim');
  // The victim holds four requests and keeps places leased ahead in its pool.
  await kill(victim, await holdOneByOne(victim, secret, 4));
  // Nothing is in flight, but its places, the four used and those idle, are still counted.
  holding.countMostFromNow();
  const before = await wave(other, secret, LIMIT);
  expect(before.held).toBeLessThanOrEqual(LIMIT - 4);
  holding.release();
  await before.all;
  // The lease runs out: every place is back, the idle ones too.
  clock.advance(LEASE_SECONDS * 1_000);
  await waitFor(
    () => free(third, id),
    (n) => n === LIMIT,
  );
  const after = await wave(third, secret, LIMIT + 2);
  expect(after.held).toBe(LIMIT);
  expect(holding.most).toBe(LIMIT);
  holding.release();
  await after.all;
}, 120_000);
