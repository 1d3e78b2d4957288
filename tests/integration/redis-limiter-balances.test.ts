/**
 * The Redis limiter's balances against a private redis-server (which these tests may flush): exact
 * arithmetic up to 2^53 - 1, what a balance and a window keep when Redis loses keys while it stays up,
 * and a key's own counts and balance when it moves between consumers. Replicas are limiters of their
 * own on one Redis, as the service runs them (command and subscriber connections each).
 */
import { Redis } from 'ioredis';
import { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { balanceSet, type Balance } from '../../src/plans/balance.js';
import type { Plan } from '../../src/plans/plan.js';
import type { Subject } from '../../src/plans/subject.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { plan } from '../helpers/plans.js';
import { RedisServer } from '../helpers/redis-server.js';

const PREFIX = 'bal:';
const MAX = Number.MAX_SAFE_INTEGER;
let server: RedisServer;
let admin: Redis;
const opened: { redis: RedisConnections; limiter: RedisRateLimiter }[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
});
afterAll(async () => {
  for (const { redis, limiter } of opened) {
    await limiter.close();
    await redis.close();
  }
  await admin.quit();
  await server.destroy();
});

async function replica(): Promise<RedisRateLimiter> {
  const redis = connectRedis({ redisUrl: server.url, redisClusterNodes: undefined }, createLogger('silent'));
  expect(await redis.ready(5_000)).toBe(true);
  const limiter = new RedisRateLimiter(redis.client, PREFIX, new Metrics(), { subscriber: redis.subscriber });
  await limiter.ready();
  opened.push({ redis, limiter });
  return limiter;
}

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
