/**
 * Pools of concurrency places (docs/decisions/0209) in the Redis limiter, against a private
 * redis-server, over replicas as the service runs them: a replica admits from places it holds idle
 * without Redis, for no longer than a lease after Redis last answered its heartbeat; across replicas
 * exactly the places free are admitted, whichever replica holds them idle; a replica that closes gives
 * its idle places back.
 */
import fc from 'fast-check';
import type { Decision } from '../../src/limits/rate-limiter.js';
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import type { Plan } from '../../src/plans/plan.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';
import { keyOnly, plan } from '../helpers/plans.js';

const fleet = limiterReplicasFor('pools:');
/** The replicas' clock, which a place's lease is timed by: moved by the tests. */
let now = Date.now();
const clock = () => now;
let keys = 0;
const newKey = () => `key_${keys++}`;

/** `n` requests on `replica` at once (one turn: one call when they go to Redis). */
function together(replica: RedisRateLimiter, keyId: string, p: Plan, n: number): Promise<Decision[]> {
  return Promise.all(Array.from({ length: n }, () => replica.consume(keyOnly(keyId, p), 1, now)));
}
const admittedOf = (decisions: readonly Decision[]) => decisions.filter((d) => d.allowed);

it('admits from places its pool holds while Redis does not answer, for no longer than a lease after its last answered heartbeat', async () => {
  const leaseMs = 3_000;
  const replica = await fleet.replica({ clock, concurrencyLeaseMs: leaseMs }, 300);
  const keyId = newKey();
  const p = plan({ limit: 40, algorithm: 'concurrency' });
  // Eight at once: one call admits them and leases the replica four places more (half of eight).
  expect(admittedOf(await together(replica, keyId, p, 8))).toHaveLength(8);
  fleet.server.pause();
  try {
    // Redis hangs: four more are admitted at once, each from an idle place, as values (no call).
    const pooled = Array.from({ length: 4 }, () => replica.consume(keyOnly(keyId, p), 1, now));
    for (const d of pooled) expect(d).toMatchObject({ allowed: true });
    // The fifth has no idle place: it waits on Redis, and fails with it.
    await expect(Promise.resolve(replica.consume(keyOnly(keyId, p), 1, now))).rejects.toThrow();
    // A request ends: its place is idle again, and the next one takes it.
    (pooled[0] as Decision).release!();
    expect(replica.consume(keyOnly(keyId, p), 1, now)).toMatchObject({ allowed: true });
    (pooled[1] as Decision).release!();
    // A lease later without an answered heartbeat, Redis may have given its places to others: an idle
    // place is not used, the request goes to Redis.
    now += leaseMs;
    await expect(Promise.resolve(replica.consume(keyOnly(keyId, p), 1, now))).rejects.toThrow();
  } finally {
    fleet.server.resume();
  }
}, 30_000);

it('admits exactly the places free across three replicas, whichever holds them idle', async () => {
  const replicas = await Promise.all([
    fleet.replica({ clock }),
    fleet.replica({ clock }),
    fleet.replica({ clock }),
  ]);
  const limit = 20;
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          fc.record({ replica: fc.nat(2), requests: fc.integer({ min: 1, max: 12 }) }),
          fc.record({ ends: fc.integer({ min: 1, max: 12 }) }),
        ),
        { minLength: 4, maxLength: 12 },
      ),
      async (steps) => {
        const keyId = newKey();
        const p = plan({ limit, algorithm: 'concurrency' });
        const inFlight: Decision[] = [];
        for (const step of steps) {
          // Pools lease again once a pause after a reclaim is over; leases stay sure (30 s).
          now += 1_100;
          if ('ends' in step) {
            for (const d of inFlight.splice(0, step.ends)) d.release!();
            // Places given back to Redis go at the end of the turn, each on its replica's connection:
            // a command of each sent after them is answered after them.
            await new Promise(setImmediate);
            await Promise.all(replicas.map((r) => r.peek(keyOnly(keyId, p), now)));
            continue;
          }
          const admitted = admittedOf(await together(replicas[step.replica]!, keyId, p, step.requests));
          expect(admitted).toHaveLength(Math.min(step.requests, limit - inFlight.length));
          inFlight.push(...admitted);
        }
        for (const d of inFlight) d.release!();
      },
    ),
    { numRuns: 15 },
  );
}, 120_000);

it('gives its idle places back when it closes', async () => {
  const [replica, other] = await Promise.all([fleet.replica({ clock }), fleet.replica({ clock })]);
  const keyId = newKey();
  const p = plan({ limit: 20, algorithm: 'concurrency' });
  const held = admittedOf(await together(replica, keyId, p, 4));
  for (const d of held) d.release!();
  // Its pool keeps the four places and the two leased with them: Redis counts them as held.
  expect((await other.peek(keyOnly(keyId, p), now))[0]!.remaining).toBe(14);
  await replica.close();
  expect((await other.peek(keyOnly(keyId, p), now))[0]!.remaining).toBe(20);
});

it('puts back the places a pool keeps idle with those in use after Redis lost the count: never more than the limit across replicas', async () => {
  const [a, b] = await Promise.all([fleet.replica({ clock }), fleet.replica({ clock })]);
  const keyId = newKey();
  const p = plan({ limit: 20, algorithm: 'concurrency' });
  // a holds 8 in flight and 4 idle (half of 8, leased with them); b 2 and one idle.
  expect(admittedOf(await together(a, keyId, p, 8))).toHaveLength(8);
  expect(admittedOf(await together(b, keyId, p, 2))).toHaveLength(2);
  await fleet.admin.del(`pools:{${keyId}}:concurrency`);
  // b finds the count lost: once every replica put back its own, idle places too, b gets exactly the
  // 10 places left, a's idle ones among them.
  expect(admittedOf(await together(b, keyId, p, 12))).toHaveLength(10);
  expect(admittedOf(await together(a, keyId, p, 2))).toHaveLength(0);
});
