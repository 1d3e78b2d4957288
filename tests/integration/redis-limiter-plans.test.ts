/**
 * The Redis limiter with plans of several limits and sliding windows, against a private redis-server:
 * replicas as the service runs them (command and subscriber connections each), so busy keys get
 * leases across every limit of their plan and replicas ask each other for leased places back.
 */
import { counterKey, slidingKey } from '../../src/limits/limiter-keys.js';
import { planOf, ruleOf, type Plan } from '../../src/plans/plan.js';
import { Pricing } from '../../src/plans/pricing.js';
import type { Decision } from '../../src/limits/rate-limiter.js';
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { SLOTS, slotMs } from '../../src/limits/sliding-window.js';
import { windowAt, type Period } from '../../src/plans/window.js';
import { load } from '../helpers/limiter-load.js';
import { keyOnly, plan } from '../helpers/plans.js';
import { waitFor } from '../helpers/poll.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';

const PREFIX = 'plans:';
const fleet = limiterReplicasFor(PREFIX);
const replica = (): Promise<RedisRateLimiter> => fleet.replica();

/** Where a key without a consumer counts: the names every version used. */
const base = (keyId: string) => `${PREFIX}{${keyId}}`;
const count = (keyId: string, period: Period, nowMs = Date.now()) =>
  counterKey(base(keyId), period, windowAt(period, nowMs).start);
const admitted = (decisions: Decision[]) => decisions.filter((d) => d.allowed).length;
let keys = 0;
const newKey = () => `key_${keys++}`;

/** `perInstant` requests at each instant, spread over `replicas` in turn, all at once. */
async function burst(
  replicas: RedisRateLimiter[],
  keyId: string,
  p: Plan,
  instants: number[],
  perInstant: number,
): Promise<Map<number, number>> {
  const byInstant = new Map<number, number>();
  await Promise.all(
    instants.flatMap((at) =>
      Array.from({ length: perInstant }, async (_, i) => {
        if ((await replicas[i % replicas.length]!.consume(keyOnly(keyId, p), 1, at)).allowed)
          byInstant.set(at, (byInstant.get(at) ?? 0) + 1);
      }),
    ),
  );
  return byInstant;
}

describe('a plan of several limits', () => {
  it('admits exactly the minute’s limit, never more than the second’s in any second, across replicas', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    const keyId = newKey();
    const p = plan({ limit: 7, period: 'second' }, { limit: 40, period: 'minute' });
    // The next minute (windows in the past would expire as soon as they are counted in).
    const minute = windowAt('minute', Date.now()).end;
    // Ten seconds of the minute, 60 requests in each, from three replicas.
    const seconds = Array.from({ length: 10 }, (_, s) => minute + s * 1_000 + 500);
    const byInstant = await burst(replicas, keyId, p, seconds, 60);
    expect([...byInstant.values()].reduce((a, b) => a + b, 0)).toBe(40);
    expect(Math.max(...byInstant.values())).toBeLessThanOrEqual(7);
    expect(await fleet.admin.get(counterKey(base(keyId), 'minute', minute))).toBe('40');
    // Refusals do not count: each second's count is what it admitted.
    for (const [at, n] of byInstant)
      expect(await fleet.admin.get(counterKey(base(keyId), 'second', windowAt('second', at).start))).toBe(
        String(n),
      );
  });

  it('leases the same places in every limit to a busy replica, and gives back what it did not use', async () => {
    const limiter = await replica();
    const keyId = newKey();
    const p = plan({ limit: 1_000_000, period: 'hour' }, { limit: 5_000_000, period: 'day' });
    await fleet.admin.config('RESETSTAT');
    const decisions = await load(limiter, keyOnly(keyId, p), 200, 5);
    expect(admitted(decisions)).toBe(1_000);
    expect(
      Number(/cmdstat_evalsha:calls=(\d+)/.exec(await fleet.admin.info('commandstats'))?.[1]),
    ).toBeLessThan(40);
    // Each request has its own place in both counts: the hour, with fewer left, is reported.
    expect(decisions.map((d) => d.limit!.rule.period).every((period) => period === 'hour')).toBe(true);
    expect(decisions.map((d) => d.limit!.remaining).sort((a, b) => b - a)).toEqual(
      Array.from({ length: 1_000 }, (_, i) => 999_999 - i),
    );
    for (const period of ['hour', 'day'] as const) {
      const settled = await waitFor(
        () => fleet.admin.get(count(keyId, period)),
        (n) => n === '1000',
        { timeoutMs: 3_000, everyMs: 20 },
      );
      expect(settled.value).toBe('1000');
    }
  });

  it('never over-admits when replicas race with leases for the last places of the tighter limit', async () => {
    const replicas = await Promise.all([replica(), replica(), replica(), replica()]);
    const keyId = newKey();
    const p = plan({ limit: 9_000, period: 'hour' }, { limit: 20_000, period: 'day' });
    // The day's window already spent 16,000 under an earlier plan: the day holds 4,000, the hour 9,000.
    await fleet.admin.set(count(keyId, 'day'), '16000', 'PX', 86_400_000);
    const decisions = (await Promise.all(replicas.map((r) => load(r, keyOnly(keyId, p), 150, 13)))).flat();
    expect(admitted(decisions)).toBe(4_000);
    expect(await fleet.admin.get(count(keyId, 'day'))).toBe('20000');
    expect(await fleet.admin.get(count(keyId, 'hour'))).toBe('4000');
    // Every refusal names the full limit.
    expect(
      decisions
        .filter((d) => !d.allowed)
        .every((d) => d.limit!.rule.period === 'day' && d.limit!.remaining === 0),
    ).toBe(true);
  });

  it('keeps what the current windows spent when the plan changes, refusing until the window resets', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const keyId = newKey();
    const now = windowAt('minute', Date.now()).end + 1_000;
    for (let i = 0; i < 6; i++)
      expect((await a.consume(keyOnly(keyId, plan({ limit: 10, period: 'minute' })), 1, now)).allowed).toBe(
        true,
      );
    const lowered = plan({ limit: 5, period: 'minute' }, { limit: 1_000, period: 'day' });
    const refused = await b.consume(keyOnly(keyId, lowered), 1, now + 10);
    expect(refused).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: lowered.limits[0],
        remaining: 0,
        resetMs: windowAt('minute', now).end,
      },
      balance: undefined,
    });
    expect(await a.peek(keyOnly(keyId, lowered), now + 20)).toEqual([
      { scope: 'key', rule: lowered.limits[0], remaining: 0, resetMs: windowAt('minute', now).end },
      { scope: 'key', rule: lowered.limits[1], remaining: 1_000, resetMs: windowAt('day', now).end },
    ]);
    expect((await b.consume(keyOnly(keyId, lowered), 1, windowAt('minute', now).end)).allowed).toBe(true);
  });
});

describe('a sliding limit', () => {
  it('admits no more than the limit across a window edge, where a fixed window admits twice the limit', async () => {
    const replicas = await Promise.all([replica(), replica()]);
    const edge = windowAt('minute', Date.now()).end;
    const across = async (p: Plan) => {
      const byInstant = await burst(replicas, newKey(), p, [edge - 500, edge + 500], 25);
      return [...byInstant.values()].reduce((x, y) => x + y, 0);
    };
    expect(await across(plan({ limit: 20, period: 'minute' }))).toBe(40);
    expect(await across(plan({ limit: 20, period: 'minute', algorithm: 'sliding' }))).toBe(20);
  });

  it('counts one period and one slot back, frees places as their slot leaves, and says when', async () => {
    const limiter = await replica();
    const keyId = newKey();
    const p = plan({ limit: 3, period: 'minute', algorithm: 'sliding' });
    const slot = slotMs('minute');
    const t0 = Math.floor(Date.now() / slot) * slot;
    expect((await limiter.consume(keyOnly(keyId, p), 1, t0)).allowed).toBe(true);
    expect((await limiter.consume(keyOnly(keyId, p), 1, t0 + 5 * slot)).allowed).toBe(true);
    expect((await limiter.consume(keyOnly(keyId, p), 1, t0 + 5 * slot)).allowed).toBe(true);
    const full = await limiter.consume(keyOnly(keyId, p), 1, t0 + SLOTS * slot);
    expect(full).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: p.limits[0],
        remaining: 0,
        resetMs: t0 + (SLOTS + 1) * slot,
      },
      balance: undefined,
    });
    expect(await limiter.peek(keyOnly(keyId, p), t0 + SLOTS * slot)).toEqual([
      { scope: 'key', rule: p.limits[0], remaining: 0, resetMs: t0 + (SLOTS + 1) * slot },
    ]);
    expect((await limiter.consume(keyOnly(keyId, p), 1, t0 + (SLOTS + 1) * slot)).allowed).toBe(true);
    expect(await fleet.admin.hgetall(slidingKey(base(keyId), 'minute'))).toEqual({
      [String(t0 / slot + 5)]: '2',
      [String(t0 / slot + SLOTS + 1)]: '1',
    });
  });

  it('names a reset in whole seconds when refusing a per-second limit, never before a retry can succeed', async () => {
    const limiter = await replica();
    const keyId = newKey();
    const p = plan({ limit: 3, period: 'second', algorithm: 'sliding' });
    const t0 = windowAt('second', Date.now()).end;
    for (const ms of [100, 110, 120])
      expect((await limiter.consume(keyOnly(keyId, p), 1, t0 + ms)).allowed).toBe(true);
    // The places of t0 + 100 ms stop counting at t0 + 1,150 ms: the whole second after that is t0 + 2 s.
    expect(await limiter.consume(keyOnly(keyId, p), 1, t0 + 130)).toMatchObject({
      allowed: false,
      limit: {
        scope: 'key',
        rule: p.limits[0],
        remaining: 0,
        resetMs: t0 + 2_000,
      },
      balance: undefined,
    });
    expect(await limiter.consume(keyOnly(keyId, p), 1, t0 + 135)).toMatchObject({
      allowed: false,
      limit: {
        resetMs: t0 + 2_000,
      },
    });
    expect(await limiter.peek(keyOnly(keyId, p), t0 + 140)).toEqual([
      { scope: 'key', rule: p.limits[0], remaining: 0, resetMs: t0 + 2_000 },
    ]);
    expect((await limiter.consume(keyOnly(keyId, p), 1, t0 + 2_000)).allowed).toBe(true);
  });

  it('admits exactly the limit within one period when busy replicas race with leases', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    const keyId = newKey();
    const p = plan({ limit: 6_000, period: 'hour', algorithm: 'sliding' }, { limit: 100_000, period: 'day' });
    const decisions = (await Promise.all(replicas.map((r) => load(r, keyOnly(keyId, p), 150, 20)))).flat();
    expect(admitted(decisions)).toBe(6_000);
    const slots = await waitFor(
      () => fleet.admin.hvals(slidingKey(base(keyId), 'hour')),
      (values) => values.reduce((a, v) => a + Number(v), 0) === 6_000,
      { timeoutMs: 3_000, everyMs: 20 },
    );
    expect(slots.value.reduce((a, v) => a + Number(v), 0)).toBe(6_000);
    expect(await fleet.admin.get(count(keyId, 'day'))).toBe('6000');
  });
});

describe('limits that match requests', () => {
  it('counts a limit with a match in a count of its own, costs in units, exactly across replicas', async () => {
    const replicas = await Promise.all([replica(), replica()]);
    const keyId = newKey();
    const p = planOf(
      [
        ruleOf({ limit: 100, period: 'minute', name: 'searches', match: { routeIds: ['search'] } }),
        ruleOf({ limit: 1_000, period: 'minute', name: 'all' }),
      ],
      [{ match: { routeIds: ['search'] }, cost: 5 }],
    );
    const pricing = Pricing.of({ id: keyId, plan: p, balance: undefined }, undefined)!;
    const search = { routeId: 'search', method: 'GET', path: '/v1/search' };
    const lookup = { routeId: 'lookup', method: 'GET', path: '/v1/lookup' };
    const minute = windowAt('minute', Date.now()).end + 500;
    // 30 searches (cost 5) and 60 lookups (cost 1), interleaved over two replicas at one instant.
    const requests = Array.from({ length: 90 }, (_, i) => (i % 3 === 0 ? search : lookup));
    const decisions = await Promise.all(
      requests.map((request, i) =>
        replicas[i % 2]!.consume(
          pricing.subjectsFor(request)!,
          pricing.costRuleOf(request)?.cost ?? 1,
          minute,
        ),
      ),
    );
    const admittedOf = (r: typeof search) =>
      decisions.filter((d, i) => requests[i] === r && d.allowed).length;
    // `searches` holds 20 searches of 5 units; lookups are not its to count.
    expect(admittedOf(search)).toBe(20);
    expect(admittedOf(lookup)).toBe(60);
    expect(await fleet.admin.get(`${counterKey(base(keyId), 'minute', minute - 500)}:m:searches`)).toBe(
      '100',
    );
    expect(await fleet.admin.get(counterKey(base(keyId), 'minute', minute - 500))).toBe(String(20 * 5 + 60));
  });
});

describe('every limit’s state on request (verify)', () => {
  it('comes with decisions taken from a lease and from a call, admitted or refused', async () => {
    const limiter = await replica();
    const keyId = newKey();
    const p = plan({ limit: 3, period: 'second', name: 'burst' }, { limit: 100_000, period: 'hour' });
    const at = windowAt('hour', Date.now()).end + 100;
    const statesOf = async () => {
      const decision = await limiter.consume(keyOnly(keyId, p), 1, at);
      return { allowed: decision.allowed, states: decision.states.map((s) => [s.rule.name, s.remaining]) };
    };
    expect(await statesOf()).toEqual({
      allowed: true,
      states: [
        ['burst', 2],
        ['hour', 99_999],
      ],
    });
    await statesOf();
    await statesOf();
    expect(await statesOf()).toEqual({
      allowed: false,
      states: [
        ['burst', 0],
        ['hour', 99_997],
      ],
    });
  });
});
