import { AuthThrottle, type FailureThrottle } from '../proxy/auth-throttle.js';
import { windowAt, type RateLimitPolicy } from '../limits/window.js';
import type { Logger } from '../ops/logger.js';
import type { RedisClient } from './connect.js';

/**
 * Failed authentications per client address counted across replicas: one Redis counter per address
 * and window, so the budget is shared, not one per replica. Each failure increments it (off the
 * request path); once it reaches the limit this replica refuses the address until the window ends.
 * A replica learns of a block with its own next failure from that address, so the replicas together
 * let through at most the limit plus one guess each. Counted in memory as well: while Redis is
 * unreachable each replica still throttles on its own count.
 */
export class SharedAuthThrottle implements FailureThrottle {
  private readonly local: AuthThrottle;
  /** address → end of the window in which the shared count reached the limit; oldest first. */
  private readonly blocked = new Map<string, number>();

  constructor(
    private readonly client: RedisClient,
    /** Redis key prefix and the throttle's name: `<prefix>auth-failures:<name>:{<address>}:<window>`. */
    private readonly keyPrefix: string,
    private readonly policy: RateLimitPolicy,
    private readonly logger: Logger,
    private readonly maxAddresses = 10_000,
  ) {
    this.local = new AuthThrottle(policy, maxAddresses);
  }

  blockedUntil(address: string, nowMs: number): number | undefined {
    const shared = this.blocked.get(address);
    if (shared !== undefined && shared > nowMs) return shared;
    return this.local.blockedUntil(address, nowMs);
  }

  fail(address: string, nowMs: number): void {
    this.local.fail(address, nowMs);
    const window = windowAt(this.policy.period, nowMs);
    const key = `${this.keyPrefix}{${address}}:${window.start}`;
    this.client
      .multi()
      .incr(key)
      .pexpireat(key, window.end + 1_000)
      .exec()
      .then((replies) => {
        const count = Number(replies?.[0]?.[1] ?? 0);
        if (count < this.policy.limit) return;
        if (!this.blocked.has(address) && this.blocked.size >= this.maxAddresses) this.blocked.delete(this.blocked.keys().next().value as string);
        this.blocked.set(address, window.end);
      })
      .catch((err: Error) => this.logger.warn({ err: err.message }, 'shared failed-authentication count unavailable; counting on this replica only'));
  }
}
