import type { LimitDecision, RateLimiter } from './rate-limiter.js';
import { windowAt, type RateLimitPolicy } from './window.js';

interface Counter {
  windowEnd: number;
  count: number;
}

/** In-process counters for the single-node (embedded) mode and for Redis outages in `open` mode. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly counters = new Map<string, Counter>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepIntervalMs = 60_000) {
    // Expired windows are dropped in bulk so the map holds only live keys.
    this.sweeper = setInterval(() => this.sweep(Date.now()), sweepIntervalMs).unref();
  }

  consume(keyId: string, policy: RateLimitPolicy, nowMs: number): LimitDecision {
    const counterKey = keyId + '|' + policy.period;
    let counter = this.counters.get(counterKey);
    if (!counter || counter.windowEnd <= nowMs) {
      counter = { windowEnd: windowAt(policy.period, nowMs).end, count: 0 };
      this.counters.set(counterKey, counter);
    }
    const allowed = counter.count < policy.limit;
    if (allowed) counter.count++;
    return { allowed, limit: policy.limit, remaining: Math.max(0, policy.limit - counter.count), resetMs: counter.windowEnd };
  }

  peek(keyId: string, policy: RateLimitPolicy, nowMs: number): Promise<LimitDecision> {
    const counter = this.counters.get(keyId + '|' + policy.period);
    const end = windowAt(policy.period, nowMs).end;
    const used = counter && counter.windowEnd === end ? counter.count : 0;
    return Promise.resolve({
      allowed: used < policy.limit,
      limit: policy.limit,
      remaining: Math.max(0, policy.limit - used),
      resetMs: end,
    });
  }

  private sweep(nowMs: number): void {
    for (const [key, counter] of this.counters) if (counter.windowEnd <= nowMs) this.counters.delete(key);
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}
