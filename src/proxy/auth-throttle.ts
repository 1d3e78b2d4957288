import { windowAt, type RateLimitPolicy } from '../limits/window.js';

interface Failures {
  windowEnd: number;
  count: number;
}

/**
 * Failed authentications per client address. `blockedUntil` answers from memory (it runs on the
 * request path); `fail` may also tell other replicas.
 */
export interface FailureThrottle {
  /** The end of the window in which `address` is refused, or `undefined` while it may still try. */
  blockedUntil(address: string, nowMs: number): number | undefined;
  fail(address: string, nowMs: number): void;
}

/**
 * Failed authentications per client address, in fixed windows. An address over the limit gets 429
 * for secrets the key cache doesn't already know, so guessing stops reaching the database while
 * valid keys behind the same address (a NAT, an untrusted load balancer) keep working. In process
 * and bounded: the oldest addresses are forgotten first.
 */
export class AuthThrottle implements FailureThrottle {
  private readonly failures = new Map<string, Failures>();

  constructor(
    private readonly policy: RateLimitPolicy,
    private readonly maxAddresses = 10_000,
  ) {}

  /** The end of the window in which `address` is refused, or `undefined` while it may still try. */
  blockedUntil(address: string, nowMs: number): number | undefined {
    const f = this.failures.get(address);
    return f !== undefined && f.windowEnd > nowMs && f.count >= this.policy.limit ? f.windowEnd : undefined;
  }

  fail(address: string, nowMs: number): void {
    const f = this.failures.get(address);
    if (f !== undefined && f.windowEnd > nowMs) {
      f.count++;
      return;
    }
    if (f === undefined && this.failures.size >= this.maxAddresses) {
      this.failures.delete(this.failures.keys().next().value as string);
    }
    this.failures.set(address, { windowEnd: windowAt(this.policy.period, nowMs).end, count: 1 });
  }
}
