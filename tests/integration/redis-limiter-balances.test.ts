/**
 * The Redis limiter's balances against a private redis-server (which these tests may flush): exact
 * arithmetic up to 2^53 - 1, what a balance and a window keep when Redis loses keys while it stays up,
 * and a key's own counts and balance when it moves between consumers. Replicas are limiters of their
 * own on one Redis, as the service runs them (command and subscriber connections each).
 */
import type { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { balanceSet, type Balance } from '../../src/plans/balance.js';
import type { Plan } from '../../src/plans/plan.js';
import type { Subject } from '../../src/plans/subject.js';
import { plan } from '../helpers/plans.js';
import { limiterReplicasFor } from '../helpers/limiter-replicas.js';

const PREFIX = 'bal:';
const MAX = Number.MAX_SAFE_INTEGER;
const fleet = limiterReplicasFor(PREFIX);
const replica = (): Promise<RedisRateLimiter> => fleet.replica();

let ids = 0;
const nextId = (kind: string) => `${kind}_${ids++}_${Date.now()}`;

/** A balance of `units` without a refill, counted from `floor` spent. */
const balanceOf = (units: number, floor = 0): Balance => ({
  ...balanceSet(0, units, null, null, Date.now()),
  floor,
});

describe('balance arithmetic', () => {
  it('is exact up to 2^53 - 1: what a decision says is left is what the balance holds', async () => {
    const limiter = await replica();
    for (const [granted, floor] of [
      [MAX, 0],
      [MAX, 3],
      [MAX - 10, 0],
    ] as const) {
      const subjects: Subject[] = [
        { scope: 'key', id: nextId('key'), plan: plan(), balance: balanceOf(granted, floor) },
      ];
      let spent = floor;
      for (const cost of [1, 3, 7]) {
        const decision = await limiter.consume(subjects, cost, Date.now());
        spent += cost;
        expect(decision.balance?.remaining).toBe(granted - spent);
        const [held] = await limiter.peekBalances(subjects, Date.now());
        expect(held!.remaining).toBe(granted - spent);
      }
    }
  });
});

describe('a key that moves between consumers', () => {
  /** The subjects of key `key` under each consumer in turn (undefined: none), as a key cache builds them. */
  const under = (key: Subject, consumer: Subject | undefined): Subject[] =>
    consumer === undefined ? [{ ...key }] : [{ ...key }, consumer];
  const consumerOf = (): Subject => ({
    scope: 'consumer',
    id: nextId('con'),
    plan: plan({ limit: 100_000, period: 'hour' }),
  });

  /** Units admitted when `replicas` each send `rounds` requests of `cost` for `subjects`. */
  async function spend(replicas: RedisRateLimiter[], subjects: Subject[], rounds: number, cost = 1) {
    let admitted = 0;
    for (let i = 0; i < rounds; i++)
      for (const r of replicas) if ((await r.consume(subjects, cost, Date.now())).allowed) admitted += cost;
    return admitted;
  }

  it('keeps what its own windows and balance have spent, across three replicas, one of them slow to hear of each move', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const key: Subject = {
      scope: 'key',
      id: nextId('key'),
      plan: plan({ limit: 50, period: 'hour' }),
    };
    const [first, second] = [consumerOf(), consumerOf()];
    let admitted = await spend([a, b, c], under(key, first), 4); // 12
    // a and b hear of the move to the second consumer first; c still counts under the first.
    admitted += await spend([a, b], under(key, second), 3); // 18
    admitted += await spend([c], under(key, first), 3); // 21
    admitted += await spend([c], under(key, second), 3); // 24
    // Then a forced delete of the consumer: the key has none.
    admitted += await spend([a, b, c], under(key, undefined), 3); // 33
    // And it joins the first consumer again: 17 left of its 50.
    admitted += await spend([a, b, c], under(key, first), 10);
    expect(admitted).toBe(50);
  });

  it('keeps what its own balance has spent', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const key: Subject = { scope: 'key', id: nextId('key'), plan: plan(), balance: balanceOf(300) };
    const [first, second] = [consumerOf(), consumerOf()];
    let admitted = await spend([a, b, c], under(key, first), 3, 10); // 90
    admitted += await spend([a, b], under(key, second), 3, 10); // 150
    admitted += await spend([c], under(key, first), 2, 10); // 170
    admitted += await spend([a, b, c], under(key, undefined), 2, 10); // 230
    admitted += await spend([a, b, c], under(key, second), 5, 10);
    expect(admitted).toBe(300);
    const [held] = await a.peekBalances(under(key, second), Date.now());
    expect(held!.remaining).toBe(0);
  });
});

describe('Redis losing keys while it stays up', () => {
  /** A consumer of `consumerPlan` and `balance`, and three keys of it, each with its own subjects. */
  function consumerWith(consumerPlan: Plan, balance?: Balance) {
    const consumer: Subject = { scope: 'consumer', id: nextId('con'), plan: consumerPlan, balance };
    const keys = [0, 1, 2].map((): Subject[] => [
      { scope: 'key', id: nextId('key'), plan: plan() },
      consumer,
    ]);
    return { consumer, keys };
  }

  /** Units admitted when each replica sends `rounds` requests of `cost`, through the keys in turn. */
  async function spend(replicas: RedisRateLimiter[], keys: Subject[][], rounds: number, cost = 1) {
    let admitted = 0;
    for (let i = 0; i < rounds; i++)
      for (const [n, r] of replicas.entries())
        if ((await r.consume(keys[(i + n) % keys.length]!, cost, Date.now())).allowed) admitted += cost;
    return admitted;
  }

  const losses: [string, (consumer: Subject) => Promise<unknown>][] = [
    ['FLUSHALL', () => fleet.admin.flushall()],
    ['FLUSHDB', () => fleet.admin.flushdb()],
    [
      'a deleted count',
      async (consumer) =>
        fleet.admin.del(...(await fleet.admin.keys(`${PREFIX}{${consumer.id}}:consumer:*`))),
    ],
  ];

  it.each(losses)('admits no more than a consumer’s limits after %s mid-window', async (_, lose) => {
    const replicas = [await replica(), await replica(), await replica()];
    const { consumer, keys } = consumerWith(
      plan({ limit: 300, period: 'hour' }, { limit: 3_000, period: 'day' }),
    );
    let admitted = await spend(replicas, keys, 40); // 120
    await lose(consumer);
    admitted += await spend(replicas, keys, 80);
    expect(admitted).toBe(300);
    const [hour] = await replicas[0]!.peek([consumer], Date.now());
    expect(hour!.remaining).toBe(0);
  });

  it.each(losses.slice(0, 2))('admits no more than a consumer’s balance after %s', async (_, lose) => {
    const replicas = [await replica(), await replica(), await replica()];
    // The record the replicas hold says nothing was spent: it was saved before the spending.
    const { consumer, keys } = consumerWith(plan(), balanceOf(1_000));
    let admitted = await spend(replicas, keys, 20, 10); // 600
    expect(admitted).toBe(600);
    await lose(consumer);
    admitted += await spend(replicas, keys, 20, 10);
    expect(admitted).toBe(1_000);
    const [after] = await replicas[2]!.peekBalances([consumer], Date.now());
    expect(after!.remaining).toBe(0);
  });

  it('admits no more than a key’s balance after the balance alone is deleted', async () => {
    const replicas = [await replica(), await replica(), await replica()];
    const key: Subject[] = [{ scope: 'key', id: nextId('key'), plan: plan(), balance: balanceOf(2_000) }];
    let admitted = await spend(replicas, [key], 24, 10); // 720
    await fleet.admin.del(`${PREFIX}{${key[0]!.id}}:credits`);
    admitted += await spend(replicas, [key], 60, 10);
    expect(admitted).toBe(2_000);
  });

  it('puts the counts back within a second and a half of a flush, with no request asking', async () => {
    const replicas = [await replica(), await replica()];
    const { consumer, keys } = consumerWith(plan({ limit: 1_000, period: 'hour' }));
    expect(await spend(replicas, keys, 30)).toBe(60);
    const [count] = await fleet.admin.keys(`${PREFIX}{${consumer.id}}:consumer:hour:*`);
    await fleet.admin.flushall();
    const flushedAt = Date.now();
    while ((await fleet.admin.get(count!)) !== '60') {
      expect(Date.now() - flushedAt).toBeLessThan(1_500);
      await new Promise((r) => setTimeout(r, 20));
    }
  });
});
