/**
 * The failure log across replicas (docs/guides/failures.md): a request refused on one replica is in
 * the log read from the other within 5 s, once, with the request id its client got; and the bound of
 * 100 entries per key per minute holds for the fleet, not per replica (docs/decisions/0115-*).
 */
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { burst, keyWithPlan, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

let fleet: Fleet;
let serving: Tollgate;
let other: Tollgate;
const clock = new TestClock();

beforeAll(async () => {
  fleet = await startFleet(3, clock.env);
  [serving, other] = fleet.members as [Tollgate, Tollgate];
}, 60_000);

afterAll(() => fleet?.stop(), 60_000);

it("shows a failure made on one replica in the other's log within 5 s, once", async () => {
  const key = await keyWithPlan(serving, 'failing', 1);
  const send = () =>
    fetch(`${serving.url}/v1/items?sig=query-secret`, { headers: { authorization: `Bearer ${key.secret}` } });
  expect((await send()).status).toBe(200);
  const refused = await send();
  await refused.arrayBuffer();
  expect(refused.status).toBe(429);
  const requestId = refused.headers.get('x-request-id');
  const { value, ms } = await waitFor(
    () => other.admin('GET', `/consumer-api-key/${key.id}/failures`),
    (res) => res.status === 200 && (res.body.failures as unknown[]).length > 0,
    { timeoutMs: 5_000, everyMs: 100 },
  );
  console.log(`failure visible on the other replica after ${Math.round(ms)} ms`);
  expect(ms).toBeLessThan(5_000);
  expect(value.body.failures).toEqual([
    expect.objectContaining({
      requestId,
      consumerApiKeyId: key.id,
      path: '/v1/items',
      status: 429,
      code: 'rate_limit_exceeded',
      limit: expect.objectContaining({ scope: 'key', limit: 1 }),
    }),
  ]);
  expect(JSON.stringify(value.body)).not.toContain('query-secret');
}, 30_000);

it('keeps 100 failures of a key per minute across three replicas, and counts the rest in leftOut once', async () => {
  const key = await keyWithPlan(serving, 'failing-everywhere');
  // 70 failures on each replica within one minute: each keeps all of its own, the fleet 100 of 210.
  clock.after(MINUTE_MS, 100);
  for (let round = 0; round < 7; round++) {
    const statuses = await burst(fleet.members, key.secret, 30, '/status/500');
    expect(statuses).toEqual(Array(30).fill(500));
  }
  const read = (on: Tollgate) => on.admin('GET', `/consumer-api-key/${key.id}/failures?limit=1000`);
  const { value } = await waitFor(
    () => read(other),
    (res) => res.status === 200 && res.body.failures.length + res.body.leftOut === 210,
    { timeoutMs: 10_000, everyMs: 200 },
  );
  expect([value.body.failures.length, value.body.leftOut]).toEqual([100, 110]);
  const ids = (value.body.failures as { requestId: string }[]).map((f) => f.requestId);
  expect(new Set(ids).size).toBe(100);
  // Every replica reads the same log.
  for (const member of fleet.members)
    expect(((await read(member)).body as { leftOut: number }).leftOut).toBe(110);
}, 60_000);
