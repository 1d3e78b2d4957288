/**
 * The two limiters a `ProxyHarness` suite runs against, by name: in-process counters, and Redis
 * counters whose limiter follows the harness's clock (production passes none: the wall clock), so a
 * window or a balance's period moves with the test's clock. The Redis connections close after the file.
 */
import { afterAll } from '@jest/globals';
import { RedisRateLimiter } from '../../src/limits/redis-limiter.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import type { HarnessOptions, ProxyHarness } from './proxy-harness.js';
import { COUNTING_REDIS, REDIS_URL, testKeyPrefix } from './services.js';

const connections: RedisConnections[] = [];
afterAll(() => Promise.all(connections.map((c) => c.close())));

/** The harness options of each limiter, with `env` added. */
export const HARNESS_LIMITERS: Record<
  string,
  (h: ProxyHarness, env?: Record<string, string>) => Promise<HarnessOptions>
> = {
  'in-process counters (single node)': (_h, env = {}) => Promise.resolve({ env }),
  async 'Redis counters'(h, env = {}) {
    const prefix = testKeyPrefix();
    const redis = connectRedis(
      { redisUrl: REDIS_URL, redisClusterNodes: undefined },
      createLogger('silent'),
      COUNTING_REDIS,
    );
    connections.push(redis);
    const limiter = new RedisRateLimiter(redis.client, prefix, new Metrics(), {
      subscriber: redis.subscriber,
      clock: h.clock,
    });
    await limiter.ready();
    return { env: { ...env, REDIS_URL, REDIS_KEY_PREFIX: prefix }, limiter };
  },
};
