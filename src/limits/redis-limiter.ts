import { corkedWrites, DIRECT_SCRIPTS, type RedisClient } from '../redis/connect.js';
import { defineScript, type ScriptRunner } from '../redis/script.js';
import type { Metrics } from '../ops/metrics.js';
import type { LimitDecision, RateLimiter } from './rate-limiter.js';
import { windowAt, type RateLimitPolicy } from './window.js';

/**
 * Check and count in one atomic step for `ARGV[3]` requests of one key at once: it admits as many as
 * the window still holds and counts only those, so racing replicas admit exactly `limit` per window;
 * the expiry is set once, when the window's counter is created.
 * Returns {count after this decision, how many were admitted}.
 */
const CONSUME_LUA = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local admitted = math.min(tonumber(ARGV[3]), tonumber(ARGV[1]) - count)
if admitted <= 0 then return {count, 0} end
count = redis.call('INCRBY', KEYS[1], admitted)
if count == admitted then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
return {count, admitted}
`;

/**
 * Counters outlive their window by this much. The window start is in the key name, so a late key
 * is never reused; the grace only keeps a replica whose clock lags (NTP keeps it to milliseconds)
 * from finding the counter already gone and starting it again at zero.
 */
const EXPIRY_GRACE_MS = 5_000;

/** The decisions asked for one counter (key, period, window) and limit in one turn of the event loop. */
interface Batch {
  readonly counter: string;
  readonly policy: RateLimitPolicy;
  readonly resetMs: number;
  readonly waiting: { resolve(d: LimitDecision): void; reject(err: unknown): void }[];
}

/**
 * Fixed-window counters in Redis, shared by every replica.
 *
 * The decisions a replica needs for one key within one turn of the event loop (every request whose
 * head arrived in that turn) go to Redis as one script call that asks for all of them: one command,
 * one reply and one script run instead of one per request, the first ones admitted in arrival order
 * up to what the window holds. Calls for different keys issued in the same turn share one write
 * (a corked socket on a single Redis, per-node auto-pipelines on a Cluster). So a request costs at
 * most one Redis round trip, and a busy key far less than one command.
 *
 * Windows come from the caller's clock (`nowMs`): replicas are assumed NTP-synchronised, and one
 * whose clock is off by d ms moves its window boundaries by d ms.
 *
 * Key: `<prefix>{<keyId>}:<period>:<windowStartMs>`; the hash tag puts all of a key's counters in
 * one Cluster slot.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly consumeScript: ScriptRunner;
  /** Decisions waiting for the end of this turn, by counter and limit. */
  private batches = new Map<string, Batch>();
  private readonly sendBatches = (): void => {
    const batches = this.batches;
    this.batches = new Map();
    // send() never rejects: a failed call rejects its waiters instead.
    corkedWrites(this.client, () => {
      for (const batch of batches.values()) void this.send(batch);
    });
  };

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly metrics: Metrics,
  ) {
    this.consumeScript = defineScript(client, DIRECT_SCRIPTS.consume, CONSUME_LUA, 1);
  }

  consume(keyId: string, policy: RateLimitPolicy, nowMs: number): Promise<LimitDecision> {
    const window = windowAt(policy.period, nowMs);
    const counter = this.key(keyId, policy, window.start);
    const id = counter + ' ' + policy.limit;
    let batch = this.batches.get(id);
    if (batch === undefined) {
      // setImmediate runs once the loop has read every socket that was ready: all of this turn's requests.
      if (this.batches.size === 0) setImmediate(this.sendBatches);
      batch = { counter, policy, resetMs: window.end, waiting: [] };
      this.batches.set(id, batch);
    }
    return new Promise((resolve, reject) => batch.waiting.push({ resolve, reject }));
  }

  async peek(keyId: string, policy: RateLimitPolicy, nowMs: number): Promise<LimitDecision> {
    const window = windowAt(policy.period, nowMs);
    const used = Number((await this.measure('peek', () => this.client.get(this.key(keyId, policy, window.start)))) ?? 0);
    return { allowed: used < policy.limit, limit: policy.limit, remaining: Math.max(0, policy.limit - used), resetMs: window.end };
  }

  /** The connection belongs to the composition root, which closes it after every user is done. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** One script call for the whole batch; every waiter gets its own place in the count (or the error). */
  private async send({ counter, policy, resetMs, waiting }: Batch): Promise<void> {
    let count: number;
    let admitted: number;
    try {
      [count, admitted] = (await this.measure('consume', () =>
        this.consumeScript([counter], [policy.limit, resetMs + EXPIRY_GRACE_MS, waiting.length]),
      )) as [number, number];
    } catch (err) {
      for (const w of waiting) w.reject(err);
      return;
    }
    const limit = policy.limit;
    const before = count - admitted;
    for (let i = 0; i < waiting.length; i++) {
      const allowed = i < admitted;
      const remaining = allowed ? limit - (before + i + 1) : Math.max(0, limit - count);
      waiting[i]!.resolve({ allowed, limit, remaining, resetMs });
    }
  }

  private key(keyId: string, policy: RateLimitPolicy, windowStart: number): string {
    return `${this.prefix}{${keyId}}:${policy.period}:${windowStart}`;
  }

  private async measure<T>(operation: string, run: () => Promise<T>): Promise<T> {
    const end = this.metrics.redisDuration.startTimer({ operation });
    try {
      return await run();
    } catch (err) {
      this.metrics.redisErrors.inc({ operation });
      throw err;
    } finally {
      end();
    }
  }
}
