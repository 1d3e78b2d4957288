import { afterAll, beforeAll, expect } from '@jest/globals';
import { Redis } from 'ioredis';
import { RedisRateLimiter, type RedisRateLimiterOptions } from '../../src/limits/redis-limiter.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { connectRedis, type RedisConnections } from '../../src/redis/connect.js';
import { RedisServer } from './redis-server.js';
import { COUNTING_REDIS } from './services.js';

/**
 * Replicas of the Redis limiter on one private redis-server (which a test may flush, pause or stop),
 * as the service runs them: each with its command and subscriber connections (connectRedis), so a
 * busy subject gets leases and replicas ask each other for leased units back.
 */
export class LimiterReplicas {
  private readonly opened: { redis: RedisConnections; limiter: RedisRateLimiter }[] = [];
  /** The replicas' metrics (one registry): what their Redis commands did, failures included. */
  readonly metrics = new Metrics();

  private constructor(
    readonly server: RedisServer,
    /** A connection of the test's own, to read and change what Redis holds. */
    readonly admin: Redis,
    private readonly prefix: string,
  ) {}

  static async start(prefix: string): Promise<LimiterReplicas> {
    const server = await RedisServer.start();
    return new LimiterReplicas(server, new Redis(server.url), prefix);
  }

  /** A new replica's limiter, ready; `options` as RedisRateLimiter takes them (a clock, a concurrency lease). */
  async replica(
    options: Pick<RedisRateLimiterOptions, 'clock' | 'concurrencyLeaseMs'> = {},
    commandTimeoutMs = COUNTING_REDIS.commandTimeoutMs,
  ): Promise<RedisRateLimiter> {
    const redis = connectRedis(
      { redisUrl: this.server.url, redisClusterNodes: undefined },
      createLogger('silent'),
      { commandTimeoutMs },
    );
    expect(await redis.ready(5_000)).toBe(true);
    const limiter = new RedisRateLimiter(redis.client, this.prefix, this.metrics, {
      subscriber: redis.subscriber,
      ...options,
    });
    await limiter.ready();
    this.opened.push({ redis, limiter });
    return limiter;
  }

  /**
   * `limiter` dies as a SIGKILLed process does: its connections cut, nothing given back (its leases
   * and what they hold stay counted), never closed.
   */
  async kill(limiter: RedisRateLimiter): Promise<void> {
    const at = this.opened.findIndex((opened) => opened.limiter === limiter);
    const [killed] = this.opened.splice(at, 1);
    await killed!.redis.close();
  }

  async close(): Promise<void> {
    await Promise.all(
      this.opened.map(async ({ redis, limiter }) => {
        await limiter.close();
        await redis.close();
      }),
    );
    await this.admin.quit();
    await this.server.destroy();
  }
}

/** Replicas on a redis-server of their own for a test file: started before its tests, closed after. */
export function limiterReplicasFor(prefix: string): {
  replica(
    options?: Pick<RedisRateLimiterOptions, 'clock' | 'concurrencyLeaseMs'>,
    commandTimeoutMs?: number,
  ): Promise<RedisRateLimiter>;
  kill(limiter: RedisRateLimiter): Promise<void>;
  readonly admin: Redis;
  readonly server: RedisServer;
  readonly metrics: Metrics;
} {
  let fleet: LimiterReplicas;
  beforeAll(async () => {
    fleet = await LimiterReplicas.start(prefix);
  });
  afterAll(() => fleet.close());
  return {
    replica: (options, commandTimeoutMs) => fleet.replica(options, commandTimeoutMs),
    kill: (limiter) => fleet.kill(limiter),
    get admin() {
      return fleet.admin;
    },
    get server() {
      return fleet.server;
    },
    get metrics() {
      return fleet.metrics;
    },
  };
}
