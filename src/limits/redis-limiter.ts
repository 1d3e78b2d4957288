import type { RedisClient } from '../redis/connect.js';
import { defineScript, type ScriptRunner } from '../redis/script.js';
import type { Metrics } from '../ops/metrics.js';
import type { LimitDecision, RateLimiter } from './rate-limiter.js';
import { windowAt, type RateLimitPolicy } from './window.js';

/**
 * Check and count in one atomic step: only admitted requests are counted, so racing replicas admit
 * exactly `limit` per window; the expiry is set once, when the window's counter is created.
 * Returns {count after this decision, 1 if admitted}.
 */
const CONSUME_LUA = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count >= tonumber(ARGV[1]) then return {count, 0} end
count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
return {count, 1}
`;

/**
 * Counters outlive their window by this much. The window start is in the key name, so a late key
 * is never reused; the grace only keeps a replica whose clock lags (NTP keeps it to milliseconds)
 * from finding the counter already gone and starting it again at zero.
 */
const EXPIRY_GRACE_MS = 5_000;

/**
 * Fixed-window counters in Redis, shared by every replica: one script call (one round trip, shared
 * with concurrent requests through auto-pipelining) per decision.
 *
 * Windows come from the caller's clock (`nowMs`): replicas are assumed NTP-synchronised, and one
 * whose clock is off by d ms moves its window boundaries by d ms.
 *
 * Key: `<prefix>{<keyId>}:<period>:<windowStartMs>`; the hash tag puts all of a key's counters in
 * one Cluster slot.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly consumeScript: ScriptRunner;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly metrics: Metrics,
  ) {
    this.consumeScript = defineScript(client, 'tollgateConsume', CONSUME_LUA, 1);
  }

  async consume(keyId: string, policy: RateLimitPolicy, nowMs: number): Promise<LimitDecision> {
    const window = windowAt(policy.period, nowMs);
    const reply = (await this.measure('consume', () =>
      this.consumeScript([this.key(keyId, policy, window.start)], [policy.limit, window.end + EXPIRY_GRACE_MS]),
    )) as [number, number];
    const [count, admitted] = reply;
    return { allowed: admitted === 1, limit: policy.limit, remaining: Math.max(0, policy.limit - count), resetMs: window.end };
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
