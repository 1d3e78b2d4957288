/**
 * The Redis limiter deciding a key and its consumer in one step (docs/guides/consumers.md, docs/guides/credits.md), against a
 * private redis-server: replicas as the service runs them (command and subscriber connections each),
 * so a busy consumer gets leases on every replica and replicas ask each other for leased units back.
 */
import { counterKey } from '../../src/limits/limiter-keys.js';
import type { Plan } from '../../src/plans/plan.js';
import type { Decision } from '../../src/limits/rate-limiter.js';
import type { Subject } from '../../src/plans/subject.js';
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { windowAt } from '../../src/plans/window.js';
import { load } from '../helpers/limiter-load.js';
import { plan } from '../helpers/plans.js';
import { waitFor } from '../helpers/poll.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';

const PREFIX = 'con:';
const fleet = limiterReplicasFor(PREFIX);
const replica = (): Promise<RedisRateLimiter> => fleet.replica();

let consumers = 0;
/** A consumer of `plan` and `keys` keys, each with its own plan (none: `plan()`): each key's subjects. */
function consumerOf(consumerPlan: Plan, keyPlans: Plan[]): { consumer: Subject; keys: Subject[][] } {
  const consumer: Subject = { scope: 'consumer', id: `con_${consumers++}`, plan: consumerPlan };
  return {
    consumer,
    keys: keyPlans.map((p, k) => [{ scope: 'key', id: `key_${consumer.id}_${k}`, plan: p }, consumer]),
  };
}

/** Where a consumer's counts and those of its keys are: one hash tag, the consumer's. */
const consumerCount = (consumer: Subject, period: 'hour' | 'minute') =>
  counterKey(`${PREFIX}{${consumer.id}}:consumer`, period, windowAt(period, Date.now()).start);
const keyCount = (consumer: Subject, key: Subject[], period: 'hour' | 'minute') =>
  counterKey(`${PREFIX}{${consumer.id}}:key:${key[0]!.id}`, period, windowAt(period, Date.now()).start);

/** Script calls Redis ran since the last RESETSTAT. */
async function scriptCalls(): Promise<number> {
  const info = await fleet.admin.info('commandstats');
  return (
    Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0) +
    Number(/cmdstat_eval:calls=(\d+)/.exec(info)?.[1] ?? 0)
  );
}

/** A repeatable sequence of numbers in [0, 1) (mulberry32): the same mix of costs on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('a key and its consumer, one decision', () => {
  it('charges the consumer nothing when the key refuses, and the key nothing when the consumer refuses', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const { consumer, keys } = consumerOf(plan({ limit: 25, period: 'hour' }), [
      plan({ limit: 10, period: 'hour' }),
      plan({ limit: 100, period: 'hour' }),
    ]);
    const [first, second] = keys as [Subject[], Subject[]];
    const now = Date.now();
    expect((await a.consume(first, 5, now)).allowed).toBe(true);
    expect((await b.consume(first, 5, now)).allowed).toBe(true);
    const byKey = await a.consume(first, 1, now);
    expect(byKey).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        remaining: 0,
        rule: first[0]!.plan.limits[0],
      },
    });
    expect(await fleet.admin.get(consumerCount(consumer, 'hour'))).toBe('10');
    for (const r of [a, b, a]) expect((await r.consume(second, 5, now)).allowed).toBe(true);
    // The consumer holds 0: a request its key has room for is refused, and charges the key nothing.
    const byConsumer = await b.consume(second, 1, now);
    expect(byConsumer).toMatchObject({
      allowed: false,
      limit: {
        scope: 'consumer',
        remaining: 0,
        rule: consumer.plan.limits[0],
      },
    });
    expect(await fleet.admin.get(keyCount(consumer, second, 'hour'))).toBe('15');
    expect(await fleet.admin.get(keyCount(consumer, first, 'hour'))).toBe('10');
    expect(await fleet.admin.get(consumerCount(consumer, 'hour'))).toBe('25');
    expect(await a.peek(second, now)).toEqual([
      { scope: 'key', rule: second[0]!.plan.limits[0], remaining: 85, resetMs: windowAt('hour', now).end },
      { scope: 'consumer', rule: consumer.plan.limits[0], remaining: 0, resetMs: windowAt('hour', now).end },
    ]);
  });

  it('reports whichever of the key’s and the consumer’s limits has the fewest units left', async () => {
    const limiter = await replica();
    const { consumer, keys } = consumerOf(plan({ limit: 50, period: 'minute' }), [
      plan({ limit: 20, period: 'hour' }),
    ]);
    const now = Date.now();
    expect(await limiter.consume(keys[0]!, 5, now)).toMatchObject({
      allowed: true,
      limit: {
        scope: 'key',
        rule: keys[0]![0]!.plan.limits[0],
        remaining: 15,
        resetMs: windowAt('hour', now).end,
      },
      balance: undefined,
    });
    await fleet.admin.incrby(consumerCount(consumer, 'minute'), 40);
    expect(await limiter.consume(keys[0]!, 1, now)).toMatchObject({
      allowed: true,
      limit: {
        scope: 'consumer',
        rule: consumer.plan.limits[0],
        remaining: 4,
        resetMs: windowAt('minute', now).end,
      },
      balance: undefined,
    });
  });

  it('admits exactly the consumer’s limit in units when ten keys on three replicas race with costs of 1 and 5, leases and all', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    // Even keys have a plan of their own (far from full), odd keys none: both shapes share the consumer.
    const { consumer, keys } = consumerOf(
      plan({ limit: 20_000, period: 'hour' }),
      Array.from({ length: 10 }, (_, k) =>
        k % 2 === 0 ? plan({ limit: 1_000_000, period: 'hour' }) : plan(),
      ),
    );
    const random = seeded(25);
    /** Per replica, each request's key and cost, in the order load() asks. */
    const asked: { key: number; cost: number }[][] = replicas.map(() => []);
    const decided = await Promise.all(
      replicas.map((r, n) =>
        load(
          r,
          (i) => {
            const request = { key: (i + n) % 10, cost: random() < 0.3 ? 5 : 1 };
            asked[n]!.push(request);
            return [keys[request.key]!, request.cost];
          },
          250,
          20,
        ),
      ),
    );
    const units = (decisions: Decision[], n: number, key?: number) =>
      decisions.reduce(
        (sum, d, i) =>
          d.allowed && (key === undefined || asked[n]![i]!.key === key) ? sum + asked[n]![i]!.cost : sum,
        0,
      );
    const admitted = decided.reduce((sum, decisions, n) => sum + units(decisions, n), 0);
    expect(admitted).toBe(20_000);
    // Every refusal is the consumer's, for a cost more than it had left.
    const refusals = decided.flatMap((decisions, n) =>
      decisions.map((d, i) => ({ d, cost: asked[n]![i]!.cost })).filter(({ d }) => !d.allowed),
    );
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals.every(({ d, cost }) => d.limit!.scope === 'consumer' && d.limit!.remaining < cost)).toBe(
      true,
    );
    // Leased units nobody used come back: the counts are what was admitted, the consumer's and each key's.
    const settled = await waitFor(
      () => fleet.admin.get(consumerCount(consumer, 'hour')),
      (count) => count === '20000',
      { timeoutMs: 3_000, everyMs: 20 },
    );
    expect(settled.value).toBe('20000');
    for (let k = 0; k < 10; k += 2) {
      const throughKey = decided.reduce((sum, decisions, n) => sum + units(decisions, n, k), 0);
      const count = await waitFor(
        () => fleet.admin.get(keyCount(consumer, keys[k]!, 'hour')),
        (c) => c === String(throughKey),
        { timeoutMs: 3_000, everyMs: 20 },
      );
      expect(count.value).toBe(String(throughKey));
    }
    expect(await fleet.admin.exists(keyCount(consumer, keys[1]!, 'hour'))).toBe(0);
  });

  it('admits exactly the consumer’s limit when Redis is flushed mid-window, leases and all', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    const { consumer, keys } = consumerOf(
      plan({ limit: 20_000, period: 'hour' }),
      Array.from({ length: 10 }, (_, k) =>
        k % 2 === 0 ? plan({ limit: 1_000_000, period: 'hour' }) : plan(),
      ),
    );
    const random = seeded(34);
    const asked: number[][] = replicas.map(() => []);
    let flushed: Promise<unknown> | undefined;
    const decided = await Promise.all(
      replicas.map((r, n) =>
        load(
          r,
          (i) => {
            // Halfway through: every count and lease book gone, Redis still up.
            if (n === 0 && i === 2_000) flushed = fleet.admin.flushall();
            const cost = random() < 0.3 ? 5 : 1;
            asked[n]!.push(cost);
            return [keys[(i + n) % 10]!, cost];
          },
          250,
          20,
        ),
      ),
    );
    expect(await flushed).toBe('OK');
    const admitted = decided.reduce(
      (sum, decisions, n) => sum + decisions.reduce((s, d, i) => (d.allowed ? s + asked[n]![i]! : s), 0),
      0,
    );
    expect(admitted).toBe(20_000);
    const settled = await waitFor(
      () => fleet.admin.get(consumerCount(consumer, 'hour')),
      (count) => count === '20000',
      { timeoutMs: 3_000, everyMs: 20 },
    );
    expect(settled.value).toBe('20000');
  });

  it('decides most of a hot consumer’s requests without a call, spread over ten keys and two replicas', async () => {
    // The limiters' time is the load's, a millisecond a turn of either replica: leases are sized and
    // end by it, so the calls counted are the leases' doing, not the machine's pace (on the wall clock
    // a loaded machine passed the bound).
    let now = Date.now();
    const clock = () => now;
    const replicas = await Promise.all([fleet.replica({ clock }), fleet.replica({ clock })]);
    const shapes = {
      'the consumer’s plan alone': consumerOf(
        plan({ limit: 10_000_000, period: 'hour' }),
        Array.from({ length: 10 }, () => plan()),
      ),
      'plans on the keys and the consumer': consumerOf(
        plan({ limit: 10_000_000, period: 'hour' }),
        Array.from({ length: 10 }, () => plan({ limit: 1_000_000, period: 'hour' })),
      ),
    };
    for (const [shape, { keys }] of Object.entries(shapes)) {
      await fleet.admin.config('RESETSTAT');
      const decisions = (
        await Promise.all(
          replicas.map((r, n) =>
            load(
              r,
              (i) => {
                if (i % 20 === 0) now++;
                return [keys[(i + n) % 10]!, 1];
              },
              200,
              20,
              undefined,
              0,
              clock,
            ),
          ),
        )
      ).flat();
      expect(decisions.every((d) => d.allowed)).toBe(true);
      const perRequest = (await scriptCalls()) / decisions.length;
      console.log(
        `hot consumer, ${shape}: ${perRequest.toFixed(4)} script calls per request (${decisions.length} requests, 10 keys, 2 replicas)`,
      );
      // Without leases: one call per group and turn, 0.05 (the consumer's plan alone) to 0.5 per request.
      expect(perRequest).toBeLessThan(0.05);
    }
  });
});
