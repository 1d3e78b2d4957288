import { join } from 'node:path';
import type { Adapters } from './app.js';
import type { Config } from './config.js';
import { LocalKeyEvents } from './keys/key-events.js';
import { RedisKeyEvents } from './keys/redis-key-events.js';
import { FailoverRateLimiter } from './limits/failover-limiter.js';
import { MemoryRateLimiter } from './limits/memory-limiter.js';
import { RedisRateLimiter } from './limits/redis-limiter.js';
import type { Logger } from './ops/logger.js';
import type { Metrics } from './ops/metrics.js';
import { AuthThrottle } from './proxy/auth-throttle.js';
import { connectRedis } from './redis/connect.js';
import { SharedAuthThrottle } from './redis/shared-auth-throttle.js';
import type { DbHandle } from './store/db.js';
import { UsageJournal } from './usage/journal.js';
import { PostgresUsageSink } from './usage/postgres-sink.js';
import { RedisPendingUsage, RedisUsageSink, UsageFlusher } from './usage/redis-usage.js';
import { UsageRepository } from './usage/usage-repository.js';

/**
 * The storage and coordination adapters for a configuration, chosen once: in-process counters and
 * usage written straight to the database without Redis; Redis counters, key events and usage hashes
 * with it. main.ts and the tests build the service through this and `buildApp`, the same way.
 */
export async function buildAdapters(config: Config, db: DbHandle, logger: Logger, metrics: Metrics): Promise<Adapters> {
  const usageRepository = new UsageRepository(db.db);
  if (!config.redisUrl && !config.redisClusterNodes) {
    // Single node: usage that cannot reach the database before exit waits in DATA_DIR for the next start.
    const journal = new UsageJournal(join(config.dataDir, 'usage-journal'));
    if (!journal.reserve()) logger.warn({ dataDir: config.dataDir }, 'no room for the usage journal in DATA_DIR: usage unwritable at exit would be dropped');
    const usageSink = new PostgresUsageSink(usageRepository, journal);
    return {
      db,
      limiter: new MemoryRateLimiter(),
      keyEvents: new LocalKeyEvents(),
      usageRepository,
      usageSink,
      // Batches handed over and not yet known applied; the reader asks Postgres which ones it has.
      pendingUsage: [usageSink],
      background: [],
      failureThrottle: (_name, policy) => new AuthThrottle(policy),
      readinessChecks: {},
      close: () => db.close(),
    };
  }
  const redis = connectRedis(config, logger);
  if (!(await redis.ready(5_000))) logger.warn('Redis is not reachable yet; starting degraded and retrying');
  const prefix = config.redisKeyPrefix;
  const keyEvents = new RedisKeyEvents(redis.client, redis.subscriber, prefix, logger, metrics);
  return {
    db,
    limiter: new FailoverRateLimiter(
      new RedisRateLimiter(redis.client, prefix, metrics, { subscriber: redis.subscriber }),
      logger,
      metrics,
      { mode: config.redisFailureMode },
    ),
    keyEvents,
    usageRepository,
    usageSink: new RedisUsageSink(redis.client, prefix),
    pendingUsage: [new RedisPendingUsage(redis.client, prefix, logger, metrics)],
    background: [new UsageFlusher(redis.client, prefix, usageRepository, logger, metrics)],
    failureThrottle: (name, policy) => new SharedAuthThrottle(redis.client, `${prefix}auth-failures:${name}:`, policy, logger),
    readinessChecks: { redis: () => redis.client.ping() },
    close: async () => {
      await redis.close();
      await db.close();
    },
  };
}
