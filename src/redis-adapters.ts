import type { Adapters } from './app.js';
import type { Config } from './config.js';
import { KeyChangeFeed } from './keys/key-change-feed.js';
import { RedisKeyEvents } from './keys/redis-key-events.js';
import { FailoverRateLimiter } from './limits/failover-limiter.js';
import { LimitNotices } from './limits/limit-notices.js';
import { RedisRateLimiter } from './limits/redis-limiter.js';
import { settledWithin } from './ops/deadline.js';
import type { Logger } from './ops/logger.js';
import type { Metrics } from './ops/metrics.js';
import { connectRedis } from './redis/connect.js';
import { SharedAuthThrottle } from './proxy/shared-auth-throttle.js';
import { RedisReservationStore } from './reservations/redis-store.js';
import { AuditRepository } from './store/audit-repository.js';
import type { DbHandle } from './store/db.js';
import { UsageFlusher } from './usage/redis/flusher.js';
import { RedisPendingUsage } from './usage/redis/pending.js';
import { RedisUsageSink } from './usage/redis/sink.js';
import type { UsageRepository } from './usage/usage-repository.js';

/** How long start-up waits for Redis subscriptions once Redis answers. */
const READY_WAIT_MS = 5_000;

/**
 * Replicas: Redis counters, key events, credential throttle and usage hashes, a flusher moving usage
 * into the database. Loaded by `buildAdapters` only when Redis is configured, so that the embedded
 * default does not load ioredis at all.
 */
export async function buildRedisAdapters(
  config: Config,
  db: DbHandle,
  usageRepository: UsageRepository,
  logger: Logger,
  metrics: Metrics,
  clock: () => number,
): Promise<Adapters> {
  const redis = connectRedis(config, logger, { commandTimeoutMs: config.redisCommandTimeoutMs });
  const reachable = await redis.ready(5_000);
  if (!reachable) logger.warn('Redis is not reachable yet; starting degraded and retrying');
  const prefix = config.redisKeyPrefix;
  const keyEvents = new RedisKeyEvents(redis.client, redis.subscriber, prefix, logger, metrics);
  // A change message can be lost; every change is also recorded with its audit entry, read here too.
  const audit = new AuditRepository(db.db);
  const recordedChanges = new KeyChangeFeed(
    (since) => audit.keyChangesSince(since),
    (change) => keyEvents.receive(change),
    logger,
  );
  const limitNotices = new LimitNotices();
  const sharedLimiter = new RedisRateLimiter(redis.client, prefix, metrics, {
    subscriber: redis.subscriber,
    notices: limitNotices,
    clock,
    concurrencyLeaseMs: config.concurrencyLeaseSeconds * 1_000,
  });
  const reservationStore = new RedisReservationStore(redis.client, redis.subscriber, prefix);
  const adapters: Adapters = {
    db,
    limiter: new FailoverRateLimiter(sharedLimiter, logger, metrics, {
      mode: config.redisFailureMode,
      notices: limitNotices,
      clock,
    }),
    limitNotices,
    keyEvents,
    usageRepository,
    usageSink: new RedisUsageSink(redis.client, prefix),
    reservationStore,
    inFlightStore: reservationStore,
    pendingUsage: [new RedisPendingUsage(redis.client, prefix, logger, metrics)],
    background: [new UsageFlusher(redis.client, prefix, usageRepository, logger, metrics), recordedChanges],
    failureThrottle: (name, policy) =>
      new SharedAuthThrottle(redis.client, `${prefix}auth-failures:${name}:`, policy, logger),
    readinessChecks: { redis: () => redis.client.ping() },
    close: async () => {
      await redis.close();
      await db.close();
    },
  };
  // Serve once the other replicas can reach this one: their key changes arrive, and they can ask for
  // places this one leases back. Asked after every script is defined (a Cluster auto-pipeline opened
  // earlier would lack the later ones); a Redis that does not answer is not waited for.
  if (
    reachable &&
    !(await settledWithin(
      Promise.all([keyEvents.ready(), sharedLimiter.ready(), reservationStore.subscribed]),
      READY_WAIT_MS,
    ))
  ) {
    logger.warn('Redis subscriptions are not ready yet; serving, and subscribing in the background');
  }
  return adapters;
}
