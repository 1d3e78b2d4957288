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
