/**
 * Token buckets and concurrency limits across three built replicas on Redis and Postgres
 * (docs/guides/plans.md): a burst admitted exactly once and the refill held over every interval, on
 * the replicas' test clock (moved, never waited for); and never more requests in flight than a
 * concurrency limit allows, as a real backend holding them open counts them.
 */
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { routedToHolding, startHoldingBackend, type HoldingBackend } from './helpers/holding-backend.js';
import { hit, hitFull, keyWithPlan, startFleet, waitFor, type Fleet } from './helpers/replicas.js';

const ROUTES_PATH = '/tollgate/routes';
let fleet: Fleet;
let holding: HoldingBackend;
/** The replicas' clock: a bucket refills by it. */
const clock = new TestClock();

beforeAll(async () => {
  holding = await startHoldingBackend();
  fleet = await startFleet(3, clock.env);
}, 120_000);

afterAll(async () => {
  holding?.release();
  await fleet?.stop();
  await holding?.close();
}, 60_000);

/** A key bound to a plan of `limits`, created through the first replica. */
async function keyOf(name: string, limits: unknown[]): Promise<{ id: string; secret: string }> {
  const [admin] = fleet.members;
  const rateLimitId = `${name}-plan`;
  const created = await admin!.admin('POST', '/rate-limit/create', { rateLimitId, limits });
  expect(created.status).toBe(201);
  const key = await keyWithPlan(admin!, name);
  const bound = await admin!.admin('POST', '/api-keys/apply-rate-limit', {
    consumerApiKeyId: key.id,
    rateLimitId,
  });
  expect(bound.status).toBe(200);
  return key;
}

/** `n` requests at once, spread over the three replicas: how many reached the backend (200). */
async function together(secret: string, n: number, path: string): Promise<number> {
  const statuses = await Promise.all(
    Array.from({ length: n }, (_, i) => hit(fleet.members[i % 3]!, secret, path)),
  );
  expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
  return statuses.filter((s) => s === 200).length;
}

it('admits a burst exactly once, then exactly the refill of each interval, summed over three replicas', async () => {
  // One unit a minute: the seconds the requests themselves take refill nothing whole.
  const key = await keyOf('bucket', [{ limit: 60, period: 'hour', algorithm: 'tokenBucket', burst: 20 }]);
  const received = () => fleet.backend.received.filter((r) => r.url.startsWith('/v1/bucket/')).length;
  const admitted: number[] = [];
  admitted.push(await together(key.secret, 90, '/v1/bucket/0'));
  expect(admitted).toEqual([20]);
  // Drained: refused, with when the bucket will hold a unit again: a minute at most, rounded up to the
  // whole second as every resetTime.
  const refused = await hitFull(fleet.members[1]!, key.secret, '/v1/bucket/refused');
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({
    code: 'rate_limit_exceeded',
    limit: 60,
    period: 'hour',
    name: 'hour',
  });
  expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(61);
  expect(refused.headers.get('ratelimit-policy')).toBe('"hour";q=60;w=3600');
  // Intervals of 3, 7 and 1 minutes, and 15 s: each admits its refill, not a unit more (the seconds the
  // requests themselves take add parts of a unit, never a whole one while they stay under 45 s).
  for (const [minutes, expected] of [
    [3, 3],
    [7, 7],
    [1, 1],
    [0.25, 0],
  ] as const) {
    clock.advance(minutes * MINUTE_MS);
    admitted.push(await together(key.secret, 30, `/v1/bucket/${minutes}`));
    expect(admitted.at(-1)).toBe(expected);
  }
  // An idle hour brings the bucket to its burst, never beyond it.
  clock.advance(60 * MINUTE_MS);
  admitted.push(await together(key.secret, 90, '/v1/bucket/full'));
  expect(admitted).toEqual([20, 3, 7, 1, 0, 20]);
  expect(received()).toBe(51);
}, 120_000);

it('never lets more requests of a key be in flight than its concurrency limit, as the backend counts them', async () => {
  const [admin] = fleet.members;
  // The held requests go to the holding backend, by a route of their own.
  const route = await admin!.admin('POST', ROUTES_PATH, {
    routeId: 'held',
    match: { pathPrefix: '/v1/held' },
    upstreamUrl: holding.url,
  });
  expect(route.status).toBe(201);
  const key = await keyOf('places', [
    { limit: 3, algorithm: 'concurrency' },
    { limit: 1_000, period: 'day' },
  ]);
  const secret = key.secret;
  const send = (i: number) => hitFull(fleet.members[i % 3]!, secret, '/v1/held');
  // Every replica routes to the holding backend once it heard of the route: a probe of each is held.
  await routedToHolding(fleet.members, secret, holding);
  /** Places free, as the key detail reads them from Redis. */
  const free = async () =>
    ((await admin!.admin('GET', `/consumer-api-key/${key.id}`)).body as KeyDetail).usage.rateLimits.limits[0]!
      .remaining;
  await waitFor(free, (n) => n === 3);
  const before = holding.received;
  // Waves of 15 at once over three replicas; between waves some held requests are answered.
  const answers: Promise<Awaited<ReturnType<typeof send>>>[] = [];
  let stillHeld = 0;
  for (const answeredAfter of [3, 2, 3, 2]) {
    const places = 3 - stillHeld;
    let answered = 0;
    const wave = Array.from({ length: 15 }, (_, i) => send(i).finally(() => answered++));
    answers.push(...wave);
    // Every request without a place is refused at once, while those with one are held.
    await waitFor(
      async () => answered,
      (n) => n === 15 - places,
    );
    // Those with a place may still be on their way to the backend (a loaded machine): held, all three.
    await waitFor(
      async () => holding.holding,
      (n) => n === 3,
    );
    holding.release(answeredAfter);
    stillHeld = 3 - answeredAfter;
    await waitFor(free, (n) => n === 3 - stillHeld);
  }
  holding.release();
  const all = await Promise.all(answers);
  const statuses = all.map((a) => a.status);
  expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
  // Each wave filled exactly the places free: 3, 3, 2 (one still held), 3; never more than 3 at once.
  expect(holding.received - before).toBe(11);
  expect(statuses.filter((s) => s === 200)).toHaveLength(11);
  expect(holding.most).toBe(3);
  const refusal = all.find((a) => a.status === 429)!;
  expect(refusal.body).toEqual({
    error: 'Too many requests of this key in flight',
    code: 'concurrency_limit_exceeded',
    limit: 3,
    name: 'concurrency',
    scope: 'key',
    per: 'key',
  });
  expect(refusal.headers.get('retry-after')).toBe('1');
  expect(refusal.headers.get('ratelimit-policy')).toBe('"concurrency";q=3, "day";q=1000;w=86400');
}, 120_000);

interface KeyDetail {
  usage: { rateLimits: { limits: { remaining: number }[] } };
}
