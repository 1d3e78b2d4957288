/**
 * A replica SIGKILLed while it holds places of a concurrency limit (docs/guides/plans.md): the other
 * replicas keep counting them until its lease (CONCURRENCY_LEASE_SECONDS) runs out, and not a moment
 * longer, on the replicas' test clock (moved by the lease, never waited for).
 */
import { TestClock } from '../helpers/test-clock.js';
import { startHoldingBackend, type HoldingBackend } from './helpers/holding-backend.js';
import { hitFull, keyWithPlan, startFleet, waitFor, type Fleet } from './helpers/replicas.js';

const LEASE_SECONDS = 3;
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
  const send = (via: typeof victim) => hitFull(via, key.secret, '/v1/infer').catch(() => undefined);

  // The victim holds all three places, its requests held open by the backend.
  const held = [send(victim), send(victim), send(victim)];
  await waitFor(
    async () => holding.holding,
    (n) => n === 3,
  );
  expect((await send(other))!.status).toBe(429);

  victim.process.kill('SIGKILL');
  await new Promise((resolve) => victim.process.once('exit', resolve));
  await Promise.all(held);
  // Its connections to the backend closed with it: nothing is in flight, but its places are still counted.
  await waitFor(
    async () => holding.holding,
    (n) => n === 0,
  );
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
