/**
 * A consumer's limit shared by its keys across three replicas on Redis and Postgres (docs/guides/consumers.md): with a fixed window, exactly the limit is admitted over all its keys and replicas (a month's, and
 * 600 a minute minute after minute, the figure of docs/decisions/0025), the 429 names the consumer's limit, and the
 * consumer's usage is what its keys did while they belonged to it.
 */
import { randomBytes } from 'node:crypto';
import { consumerWithKeys, hit, hitFull, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';
import { DAY_MS, MINUTE_MS, TestClock } from '../helpers/test-clock.js';

let fleet: Fleet;
let a: Tollgate;
/** The replicas' one clock: a window starts when the test moves it there, not when a real minute does. */
const clock = new TestClock();

beforeAll(async () => {
  fleet = await startFleet(3, clock.env);
  a = fleet.members[0]!;
}, 120_000);

afterAll(async () => {
  await fleet?.stop();
  expectNoSecretsLogged();
}, 60_000);

async function created(path: string, body: object) {
  const res = await a.admin('POST', path, body);
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

it("admits exactly a consumer's monthly limit over its ten keys on three replicas, then refuses naming the consumer's limit", async () => {
  const planId = `shared-${randomBytes(4).toString('hex')}`;
  await created('/rate-limit/create', { rateLimitId: planId, limit: 600, period: 'month' });
  const consumer = await created('/tollgate/consumers', { name: 'acme', rateLimitId: planId });
  const keys = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      created('/consumer-api-key/create', { name: `acme-${i}`, consumerId: consumer.consumerId }),
    ),
  );
  // 900 requests spread over every key and replica, 30 at a time.
  const statuses: number[] = [];
  for (let round = 0; round < 30; round++) {
    statuses.push(
      ...(await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          hit(fleet.members[(round + i) % 3]!, keys[(round * 30 + i) % 10]!.secret),
        ),
      )),
    );
  }
  expect(statuses.filter((s) => s === 200)).toHaveLength(600);
  expect(statuses.filter((s) => s === 429)).toHaveLength(300);

  const refused = await hitFull(fleet.members[1]!, keys[3]!.secret);
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({
    code: 'rate_limit_exceeded',
    name: 'consumer.month',
    scope: 'consumer',
    limit: 600,
    period: 'month',
  });

  // The consumer's usage: every request of its keys (admitted or refused), within 2 s on any replica.
  const { value: detail } = await waitFor(
    () => fleet.members[2]!.admin('GET', `/tollgate/consumers/${consumer.consumerId}`),
    (res) => res.body?.usage?.totalRequests === 901,
    { timeoutMs: 5_000, everyMs: 100 },
  );
  expect(detail.body.usage).toMatchObject({
    totalRequests: 901,
    successfulRequests: 600,
    failedRequests: 301,
    cost: 600,
  });
  expect(detail.body.usage.rateLimits).toMatchObject({
    remaining: 0,
    limits: [{ name: 'consumer.month', scope: 'consumer', remaining: 0 }],
  });

  // Moving a key to another consumer moves none of its history.
  const other = await created('/tollgate/consumers', { name: 'globex' });
  expect(
    (await a.admin('PATCH', `/consumer-api-key/${keys[0]!.id}`, { consumerId: other.consumerId })).status,
  ).toBe(200);
  expect(await hit(a, keys[0]!.secret)).toBe(200);
  const { value: moved } = await waitFor(
    () =>
      Promise.all([
        a.admin('GET', `/tollgate/consumers/${consumer.consumerId}`),
        a.admin('GET', `/tollgate/consumers/${other.consumerId}`),
      ]),
    // A key moved away within the last second or two: its pending usage under the old consumer shows once stored.
    ([from, to]) => from.body?.usage?.totalRequests === 901 && to.body?.usage?.totalRequests === 1,
    { timeoutMs: 5_000, everyMs: 100 },
  );
  expect(moved[0].body.usage.totalRequests).toBe(901);
  expect(moved[1].body.usage).toMatchObject({ totalRequests: 1, successfulRequests: 1, cost: 1 });
  const series = await a.admin(
    'GET',
    `/tollgate/consumers/${consumer.consumerId}/usage?granularity=day&from=${new Date(clock.now() - DAY_MS).toISOString()}`,
  );
  expect(series.status).toBe(200);
  expect(series.body.buckets.reduce((n: number, b: { requests: number }) => n + b.requests, 0)).toBe(901);
}, 120_000);

it("admits exactly 600 a minute of a consumer's ten keys on three replicas, minute after minute", async () => {
  const { consumerId, keys } = await consumerWithKeys(a, 'per-minute', {
    keys: 10,
    limit: 600,
    period: 'minute',
  });
  const windows: { start: number; admitted: number; refused: number; sendingMs: number }[] = [];
  for (let w = 0; w < 2; w++) {
    // Each window's 900 requests are all sent within its minute: from just after it starts (the
    // clock moved there, then running on with the wall clock).
    const start = clock.after(MINUTE_MS, 100);
    const statuses: number[] = [];
    for (let round = 0; round < 30; round++) {
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            hit(fleet.members[(round + i) % 3]!, keys[(round * 30 + i) % 10]!.secret, '/v1/per-minute'),
          ),
        )),
      );
    }
    const sendingMs = clock.now() - start;
    expect(sendingMs).toBeLessThan(MINUTE_MS);
    windows.push({
      start,
      admitted: statuses.filter((s) => s === 200).length,
      refused: statuses.filter((s) => s === 429).length,
      sendingMs,
    });
  }
  console.log(
    `A consumer of 10 keys at 600/minute on 3 replicas, 900 requests a minute spread over every key and replica:\n  ${windows.map((w) => `${new Date(w.start).toISOString()}: ${w.admitted} admitted, ${w.refused} refused (sent in ${(w.sendingMs / 1000).toFixed(1)} s)`).join('\n  ')}`,
  );
  expect(windows.map(({ admitted, refused }) => ({ admitted, refused }))).toEqual([
    { admitted: 600, refused: 300 },
    { admitted: 600, refused: 300 },
  ]);
  // The consumer's usage by minute counts the same: 600 successful and 300 refused in each.
  const from = new Date(windows[0]!.start).toISOString();
  const to = new Date(windows[1]!.start + MINUTE_MS).toISOString();
  const { value: byMinute } = await waitFor(
    () => a.admin('GET', `/tollgate/consumers/${consumerId}/usage?granularity=minute&from=${from}&to=${to}`),
    (res) => res.body?.buckets?.[1]?.requests === 900,
    { timeoutMs: 5_000, everyMs: 100 },
  );
  expect(
    byMinute.body.buckets.map((b: { successful: number; rateLimited: number }) => [
      b.successful,
      b.rateLimited,
    ]),
  ).toEqual([
    [600, 300],
    [600, 300],
  ]);
}, 240_000);
