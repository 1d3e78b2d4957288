import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from '../config.js';
import { settledWithin } from '../ops/deadline.js';
import type { Logger } from '../ops/logger.js';
import { failCommandsAfter } from './command-deadline.js';

/** A single Redis or a Redis Cluster: every adapter talks to either through this type. */
export type RedisClient = Redis | Cluster;

export interface RedisConnections {
  /** Commands: limiter scripts (request path), publishes, usage. Fails fast, never queues. */
  readonly client: RedisClient;
  /** Pub/sub only: a connection in subscriber mode can carry nothing else. */
  readonly subscriber: RedisClient;
  /** Resolves once `client` can take commands, or false after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** Deadline of every command: a Redis that stops answering costs a request this much, not a hang. */
  readonly commandTimeoutMs?: number;
}

/**
 * Script calls that skip auto-pipelining on a single Redis. The limiter already gathers a turn's
 * decisions into one call per counter, and its settlements into one call per set of counts, and
 * writes all of a turn's calls at once (`corkedWrites`); an auto-pipeline would add a pipeline object
 * and a deferred flush to every call, ~10 µs of CPU each, which is what a turn with one call (a
 * replica with few requests in flight, or a busy key's settlements) pays in full.
 * The consume script is defined once per number of keys a decision can hold (1 to 18: up to 8 limits
 * of 2 keys each, a key's plan and its consumer's four each, and 2 balances of 1 key); the settle
 * script once per number a settlement can hold (1 to 11: a count for each of those 8 limits, the 2
 * balances, and the call's mark).
 */
export const DIRECT_SCRIPTS = {
  consume: Array.from({ length: 18 }, (_, i) => `tollgateConsume${i + 1}`),
  settle: Array.from({ length: 11 }, (_, i) => `tollgateSettle${i + 1}`),
};

/** How long closing waits for a connection's QUIT or UNSUBSCRIBE before cutting it. */
export const CLOSE_WAIT_MS = 1_000;

/** Reconnect for ever (recovery is automatic), backing off to one attempt a second. */
const backoff = (times: number): number =>
  Math.min(50 * 2 ** Math.min(times, 5), 1_000) + Math.floor(Math.random() * 100);

// No offline queue, no resending after a reconnect: a limiter decision that timed out has already
// been answered from elsewhere, and replaying it later would spend quota nobody used. The command
// deadline is `failCommandsAfter`'s, not ioredis' own `commandTimeout`.
const commandOptions = {
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  connectTimeout: 2_000,
} satisfies RedisOptions;

/**
 * Opens the command and subscriber connections to `config.redisClusterNodes` (Cluster) or
 * `config.redisUrl`. Auto-pipelining batches the commands issued in one tick into one write, so
 * concurrent requests share round trips.
 */
export function connectRedis(
  config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>,
  logger: Logger,
  { commandTimeoutMs = 500 }: ConnectOptions = {},
): RedisConnections {
  let client: RedisClient;
  let subscriber: RedisClient;
  if (config.redisClusterNodes) {
    const nodes = config.redisClusterNodes.map((n) => {
      const [host, port] = n.split(':') as [string, string];
      return { host, port: Number(port) };
    });
    const url = config.redisUrl ? new URL(config.redisUrl) : undefined;
    const base: ClusterOptions = {
      clusterRetryStrategy: backoff,
      enableAutoPipelining: true,
      redisOptions: {
        ...commandOptions,
        // Credentials and TLS of the cluster come from REDIS_URL when both are set.
        ...(url?.username && { username: decodeURIComponent(url.username) }),
        ...(url?.password && { password: decodeURIComponent(url.password) }),
        ...(url?.protocol === 'rediss:' && { tls: {} }),
      },
    };
    client = new Cluster(nodes, { ...base, enableOfflineQueue: false });
    subscriber = new Cluster(nodes, { ...base, enableAutoPipelining: false });
  } else if (config.redisUrl) {
    client = new Redis(config.redisUrl, {
      ...commandOptions,
      retryStrategy: backoff,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      autoPipeliningIgnoredCommands: Object.values(DIRECT_SCRIPTS).flat(),
    });
    // The subscriber may queue: SUBSCRIBE waits for the connection and is replayed after reconnects.
    subscriber = new Redis(config.redisUrl, { retryStrategy: backoff, connectTimeout: 2_000 });
  } else {
    throw new Error('connectRedis needs REDIS_URL or REDIS_CLUSTER_NODES');
  }
  failCommandsAfter(client, commandTimeoutMs);

  // Without a listener ioredis prints every connection error; the limiter and flusher report
  // outages themselves, so these go to debug.
  for (const [role, c] of [
    ['client', client],
    ['subscriber', subscriber],
  ] as const) {
    c.on('error', (err: Error) => logger.debug({ role, err: err.message }, 'redis connection error'));
  }

  return {
    client,
    subscriber,
    ready: (timeoutMs) => whenReady(client, timeoutMs),
    async close() {
      // QUIT lets replies in flight arrive; then the connection is cut, also when QUIT failed or hung
      // (Redis down or paused): a connection left reconnecting would keep retrying, and the process alive.
      await Promise.all(
        [client, subscriber].map(async (c) => {
          await settledWithin(c.quit(), CLOSE_WAIT_MS);
          c.disconnect();
        }),
      );
    },
  };
}

/**
 * Runs `send` with the single Redis connection's socket corked, so the commands it issues leave in
 * one write. A Cluster routes each command to its slot's node and pipelines per node itself.
 */
export function corkedWrites(client: RedisClient, send: () => void): void {
  const socket = client instanceof Redis && client.status === 'ready' ? client.stream : undefined;
  socket?.cork();
  try {
    send();
  } finally {
    socket?.uncork();
  }
}

function whenReady(client: RedisClient, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    client.on('ready', onReady);
  });
}
