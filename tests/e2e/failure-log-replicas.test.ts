/**
 * The failure log across replicas (docs/guides/failures.md): a request refused on one replica is in
 * the log read from the other within 5 s, once, with the request id its client got.
 */
import { keyWithPlan, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

let fleet: Fleet;
let serving: Tollgate;
let other: Tollgate;

beforeAll(async () => {
  fleet = await startFleet(2);
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
