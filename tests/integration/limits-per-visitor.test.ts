/**
 * Limits per visitor (contract section 21, docs/decisions/0090) in both limiters: the memory limiter of
 * the embedded mode, and Redis replicas on a private redis-server. Each visitor gets exactly its
 * limit per window, in the same decision as the key's other limits and its consumer's, and the
 * replica forgets visitors whose windows ended. A token bucket and a concurrency limit per visitor
 * (contract section 26) give each visitor a bucket, or places in flight, of its own; a visitor's places
 * are given back and renewed in its own count.
 */
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { Decision, RateLimiter } from '../../src/limits/rate-limiter.js';
import { visitorOf, type Visitor } from '../../src/limits/visitor.js';
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import type { Subject } from '../../src/plans/subject.js';
import { windowAt } from '../../src/plans/window.js';
import { keyOnly, plan } from '../helpers/plans.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';
import { waitFor } from '../helpers/poll.js';

const fleet = limiterReplicasFor('visitors:');
let ids = 0;
const newId = (kind: string) => `${kind}_${ids++}`;
/** The start of the next minute: a window no other test counts in. */
const nextMinute = () => windowAt('minute', Date.now()).end;

/** `each` requests of every visitor, all at once, spread over `limiters` in turn; admitted per visitor. */
async function admittedPerVisitor(
  limiters: readonly RateLimiter[],
  subjects: readonly Subject[],
  visitors: readonly Visitor[],
  each: number,
  nowMs: number,
): Promise<number[]> {
  const decisions = await Promise.all(
    visitors.flatMap((visitor) =>
      Array.from({ length: each }, (_, i) =>
        Promise.resolve(limiters[i % limiters.length]!.consume(subjects, 1, nowMs, visitor)),
      ),
    ),
  );
  return visitors.map(
    (_, v) => decisions.slice(v * each, (v + 1) * each).filter((d: Decision) => d.allowed).length,
  );
}

const addresses = (n: number) =>
  Array.from({ length: n }, (_, i) => visitorOf(`203.0.113.${i + 1}`, undefined));

/**
 * The clock of the token bucket tests' limiters: a bucket refills by the replica's clock (the script is
 * given it at the call) and by the request's time in the memory limiter; the tests move both together.
 */
let now = Date.now();
const clock = () => now;

/** One visitor's `n` requests at `now`, one after another on `limiter`, kept in flight: the admitted ones. */
async function taken(limiter: RateLimiter, subjects: readonly Subject[], visitor: Visitor, n: number) {
  const decisions: Decision[] = [];
  for (let i = 0; i < n; i++) decisions.push(await limiter.consume(subjects, 1, now, visitor));
  return decisions.filter((d) => d.allowed);
}

describe.each([
  ['memory', () => Promise.resolve([new MemoryRateLimiter()] as RateLimiter[])],
  [
    'redis, three replicas',
    (timed?: () => number) =>
      Promise.all([
        fleet.replica({ clock: timed }),
        fleet.replica({ clock: timed }),
        fleet.replica({ clock: timed }),
      ]),
  ],
])('limits per visitor (%s)', (_mode, limitersOf: (timed?: () => number) => Promise<RateLimiter[]>) => {
  let limiters: RateLimiter[];
  /** Limiters on the test's clock (`now`). */
  let timed: RateLimiter[];
  beforeAll(async () => {
    limiters = await limitersOf();
    timed = await limitersOf(clock);
  });
  afterAll(async () => {
    for (const l of [...limiters, ...timed]) if (l instanceof MemoryRateLimiter) await l.close();
  });

  it('admits exactly the limit per window for each client address, however many come at once', async () => {
    const subjects = keyOnly(newId('key'), plan({ limit: 5, period: 'minute', per: 'clientAddress' }));
    const at = nextMinute();
    expect(await admittedPerVisitor(limiters, subjects, addresses(8), 12, at)).toEqual(Array(8).fill(5));
    // The next window: each has its limit again.
    expect(await admittedPerVisitor(limiters, subjects, addresses(8), 7, at + 60_000)).toEqual(
      Array(8).fill(5),
    );
  });

  it('admits exactly each busy visitor’s limit wave after wave, when replicas decide from leases', async () => {
    const subjects = keyOnly(
      newId('key'),
      plan({ limit: 400, period: 'minute', per: 'clientAddress' }, { limit: 1_900, period: 'minute' }),
    );
    const at = nextMinute();
    const totals = [0, 0, 0, 0, 0];
    for (let wave = 0; wave < 10; wave++) {
      const admitted = await admittedPerVisitor(limiters, subjects, addresses(5), 50, at);
      admitted.forEach((n, v) => (totals[v]! += n));
    }
    // 500 asked by each: 400 each would make 2,000, past the key's 1,900.
    for (const n of totals) expect(n).toBeLessThanOrEqual(400);
    expect(totals.reduce((a, b) => a + b, 0)).toBe(1_900);
  });

  it('checks the key’s own limit in the same decision: visitors together never pass it', async () => {
    const subjects = keyOnly(
      newId('key'),
      plan({ limit: 4, period: 'minute', per: 'clientAddress' }, { limit: 10, period: 'minute' }),
    );
    const admitted = await admittedPerVisitor(limiters, subjects, addresses(6), 6, nextMinute());
    expect(admitted.reduce((a, b) => a + b, 0)).toBe(10);
    for (const n of admitted) expect(n).toBeLessThanOrEqual(4);
  });

  it('reports the visitor’s own count, and names the refusing limit per visitor', async () => {
    const subjects = keyOnly(newId('key'), plan({ limit: 3, period: 'minute', per: 'customer' }));
    const at = nextMinute();
    const alice = visitorOf('198.51.100.1', 'alice');
    const bob = visitorOf('198.51.100.1', 'bob');
    const consume = (visitor: Visitor) => Promise.resolve(limiters[0]!.consume(subjects, 1, at, visitor));
    await consume(alice);
    await consume(alice);
    expect((await consume(bob)).limit).toMatchObject({ remaining: 2, rule: { per: 'customer' } });
    expect((await consume(alice)).limit).toMatchObject({ remaining: 0 });
    const refused = await consume(alice);
    expect(refused.allowed).toBe(false);
    expect(refused.limit).toMatchObject({ remaining: 0, rule: { per: 'customer', limit: 3 } });
    // Requests without a customer id share one count of their own.
    const without = [visitorOf('198.51.100.2', undefined), visitorOf('198.51.100.3', undefined)];
    const admitted = await admittedPerVisitor(limiters, subjects, without, 3, at);
    expect(admitted[0]! + admitted[1]!).toBe(3);
  });

  it('counts an IPv6 client by its /64', async () => {
    const subjects = keyOnly(newId('key'), plan({ limit: 2, period: 'minute', per: 'clientAddress' }));
    const sameNetwork = ['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:db8:1:2:3:4:5:6'].map((a) =>
      visitorOf(a, undefined),
    );
    const other = visitorOf('2001:db8:1:3::1', undefined);
    const admitted = await admittedPerVisitor(limiters, subjects, [...sameNetwork, other], 2, nextMinute());
    expect(admitted.slice(0, 3).reduce((a, b) => a + b, 0)).toBe(2);
    expect(admitted[3]).toBe(2);
  });

  it('counts a consumer’s limit per visitor across all its keys', async () => {
    const consumer: Subject = {
      scope: 'consumer',
      id: newId('con'),
      plan: plan({ limit: 3, period: 'minute', per: 'clientAddress' }),
    };
    const keyA = [{ scope: 'key', id: newId('key'), plan: plan() }, consumer] as Subject[];
    const keyB = [{ scope: 'key', id: newId('key'), plan: plan() }, consumer] as Subject[];
    const at = nextMinute();
    const visitor = visitorOf('192.0.2.7', undefined);
    const viaA = await admittedPerVisitor(limiters, keyA, [visitor], 2, at);
    const viaB = await admittedPerVisitor(limiters, keyB, [visitor], 4, at);
    expect(viaA[0]! + viaB[0]!).toBe(3);
    expect(await admittedPerVisitor(limiters, keyB, [visitorOf('192.0.2.8', undefined)], 4, at)).toEqual([3]);
  });
  it('gives each visitor a token bucket of its own: its burst once, then exactly its refill', async () => {
    const subjects = keyOnly(
      newId('key'),
      plan({ limit: 2, period: 'hour', algorithm: 'tokenBucket', burst: 3, per: 'clientAddress' }),
    );
    now += 3_600_000;
    expect(await admittedPerVisitor(timed, subjects, addresses(6), 7, now)).toEqual(Array(6).fill(3));
    // Two an hour: one unit every 30 minutes for each, none sooner.
    now += 1_800_000;
    expect(await admittedPerVisitor(timed, subjects, addresses(6), 4, now)).toEqual(Array(6).fill(1));
    now += 1_799_999;
    expect(await admittedPerVisitor(timed, subjects, addresses(6), 4, now)).toEqual(Array(6).fill(0));
    now += 1;
    expect(await admittedPerVisitor(timed, subjects, addresses(7), 4, now)).toEqual([
      ...Array(6).fill(1),
      3, // a new visitor: a full bucket
    ]);
  });

  it('checks a visitor’s token bucket and the key’s in the same decision', async () => {
    const subjects = keyOnly(
      newId('key'),
      plan(
        { name: 'each', limit: 1, period: 'hour', algorithm: 'tokenBucket', burst: 4, per: 'customer' },
        { name: 'all', limit: 1, period: 'hour', algorithm: 'tokenBucket', burst: 10 },
      ),
    );
    now += 3_600_000;
    const customers = ['a', 'b', 'c', 'd'].map((c) => visitorOf('192.0.2.1', c));
    const admitted = await admittedPerVisitor(timed, subjects, customers, 5, now);
    expect(admitted.reduce((a, b) => a + b, 0)).toBe(10);
    for (const n of admitted) expect(n).toBeLessThanOrEqual(4);
  });

  it('holds at most the limit of each visitor in flight, and gives a place back to that visitor alone', async () => {
    const subjects = keyOnly(
      newId('key'),
      plan(
        { name: 'each', limit: 2, algorithm: 'concurrency', per: 'customer' },
        { name: 'all', limit: 5, algorithm: 'concurrency' },
      ),
    );
    const [alice, bob, carol] = ['alice', 'bob', 'carol'].map((c) => visitorOf('198.51.100.9', c)) as [
      Visitor,
      Visitor,
      Visitor,
    ];
    const held = async (visitor: Visitor, n: number) =>
      (
        await Promise.all(
          Array.from({ length: n }, (_, i) =>
            Promise.resolve(limiters[i % limiters.length]!.consume(subjects, 7, now, visitor)),
          ),
        )
      ).filter((d) => d.allowed);
    const [aliceHeld, bobHeld] = await Promise.all([held(alice, 5), held(bob, 5)]);
    expect([aliceHeld.length, bobHeld.length]).toEqual([2, 2]);
    const refused = await limiters[0]!.consume(subjects, 1, now, alice);
    expect(refused.allowed).toBe(false);
    expect(refused.limit).toMatchObject({ remaining: 0, rule: { name: 'each', per: 'customer' } });
    // The key's five: carol gets the one left.
    expect(await held(carol, 4)).toHaveLength(1);
    // One of bob's ends: bob, and only bob, gets a place again (a release reaches the other replicas
    // a moment later).
    bobHeld[0]!.release!();
    const again = await waitFor(
      () => Promise.resolve(limiters.at(-1)!.consume(subjects, 1, now, bob)),
      (d) => d.allowed,
    );
    expect(again.value.allowed).toBe(true);
    expect(await held(alice, 3)).toHaveLength(0);
    expect(await held(carol, 3)).toHaveLength(0);
  });
});

describe('visitors in Redis', () => {
  let replica: RedisRateLimiter;
  beforeAll(async () => {
    replica = await fleet.replica();
  });

  it('names each visitor’s count after the key’s and leases a busy visitor’s units as a key’s', async () => {
    const keyId = newId('key');
    const subjects = keyOnly(keyId, plan({ limit: 100_000, period: 'minute', per: 'clientAddress' }));
    const at = nextMinute();
    const visitor = visitorOf('203.0.113.50', undefined);
    for (let i = 0; i < 20; i++) expect((await replica.consume(subjects, 1, at, visitor)).allowed).toBe(true);
    const count = `visitors:{${keyId}}:minute:${at}:a:203.0.113.50`;
    // What was admitted and what this replica leased ahead for the visitor's next requests.
    expect(Number(await fleet.admin.get(count))).toBeGreaterThan(20);
    expect(await fleet.admin.exists(`${count}:lease`)).toBe(1);
    // Another visitor of the key has a count of its own.
    expect(await fleet.admin.exists(`visitors:{${keyId}}:minute:${at}:a:203.0.113.51`)).toBe(0);
  });
});

describe('a visitor’s token bucket and places in Redis', () => {
  it('are counts named after the key’s with the visitor’s suffix', async () => {
    const replica = await fleet.replica({ clock });
    const keyId = newId('key');
    const subjects = keyOnly(
      keyId,
      plan(
        { limit: 1, period: 'minute', algorithm: 'tokenBucket', burst: 5, per: 'clientAddress' },
        { limit: 3, algorithm: 'concurrency', per: 'customer' },
      ),
    );
    expect(await taken(replica, subjects, visitorOf('203.0.113.60', 'alice'), 2)).toHaveLength(2);
    expect(await fleet.admin.hget(`visitors:{${keyId}}:bucket:minute:a:203.0.113.60`, 'u')).toBe('3');
    const places = await fleet.admin.hgetall(`visitors:{${keyId}}:concurrency:c:alice`);
    expect(Object.entries(places).filter(([field]) => field.startsWith('p:'))).toEqual([
      [expect.any(String), '2'],
    ]);
    expect(await fleet.admin.exists(`visitors:{${keyId}}:concurrency`)).toBe(0);
  });

  it("renews a visitor's places past the lease and gives them back to that visitor's count", async () => {
    const leaseMs = 900;
    const live = await fleet.replica({ clock, concurrencyLeaseMs: leaseMs });
    const keyId = newId('key');
    const subjects = keyOnly(keyId, plan({ limit: 2, algorithm: 'concurrency', per: 'customer' }));
    const alice = visitorOf(undefined, 'alice');
    const held = await taken(live, subjects, alice, 3);
    expect(held).toHaveLength(2);
    // Time passes in steps shorter than the lease: the heartbeat renews alice's count each time.
    const count = `visitors:{${keyId}}:concurrency:c:alice`;
    const start = now;
    for (let step = 0; step < 4; step++) {
      now += leaseMs / 3;
      const due = now + leaseMs / 2;
      await waitFor(
        async () => Object.values(await fleet.admin.hgetall(count)).map(Number),
        (values) => values.some((v) => v >= due),
      );
    }
    expect(now).toBeGreaterThan(start + leaseMs);
    expect(await taken(live, subjects, alice, 1)).toHaveLength(0);
    expect(await taken(live, subjects, visitorOf(undefined, 'bob'), 3)).toHaveLength(2);
    for (const d of held) d.release!();
    await waitFor(
      async () => Object.keys(await fleet.admin.hgetall(count)).filter((f) => f.startsWith('p:')),
      (fields) => fields.length === 0,
    );
    expect(await taken(live, subjects, alice, 3)).toHaveLength(2);
  });
});
