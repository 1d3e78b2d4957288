import type { LimitRule, Plan } from './plan.js';
import { isTighter, type LimitDecision, type LimitState, type RateLimiter } from './rate-limiter.js';
import { oldestCounted, SLOTS, slotAt, slotLeavesAt } from './sliding-window.js';
import { windowAt, type Period } from './window.js';

/** One limit's count for one key, in process. */
interface Count {
  /** Requests counted where `nowMs` falls. */
  used(nowMs: number): number;
  add(nowMs: number): void;
  /** When it has more room (LimitState.resetMs), given `used(nowMs)` was just read. */
  resetMs(nowMs: number): number;
  /** True once nothing counted remains. */
  spent(nowMs: number): boolean;
}

/** A fixed UTC window. */
class FixedCount implements Count {
  private windowEnd = 0;
  private count = 0;

  constructor(private readonly period: Period) {}

  used(nowMs: number): number {
    if (nowMs >= this.windowEnd) {
      this.windowEnd = windowAt(this.period, nowMs).end;
      this.count = 0;
    }
    return this.count;
  }

  add(): void {
    this.count++;
  }

  resetMs(): number {
    return this.windowEnd;
  }

  spent(nowMs: number): boolean {
    return nowMs >= this.windowEnd;
  }
}

/** A sliding window in slots (sliding-window.ts): a ring of the SLOTS + 1 slots counted. */
class SlidingCount implements Count {
  private readonly slots = new Array<number>(SLOTS + 1).fill(0);
  /** The newest slot counted; the ring holds newest − SLOTS … newest. */
  private newest = -Infinity;
  private total = 0;

  constructor(private readonly period: Period) {}

  used(nowMs: number): number {
    const slot = slotAt(this.period, nowMs);
    if (slot > this.newest) {
      // The ring's places for the new slots held slots that have left the window: empty them.
      for (let s = Math.max(this.newest + 1, oldestCounted(slot)); s <= slot; s++) {
        const at = s % (SLOTS + 1);
        this.total -= this.slots[at]!;
        this.slots[at] = 0;
      }
      this.newest = slot;
    }
    return this.total;
  }

  add(): void {
    this.slots[this.newest % (SLOTS + 1)]!++;
    this.total++;
  }

  resetMs(): number {
    for (let s = oldestCounted(this.newest); s < this.newest; s++) {
      if (this.slots[s % (SLOTS + 1)]! > 0) return slotLeavesAt(this.period, s);
    }
    return slotLeavesAt(this.period, this.newest);
  }

  spent(nowMs: number): boolean {
    return this.total === 0 || oldestCounted(slotAt(this.period, nowMs)) > this.newest;
  }
}

/** A key's counts under the limits of its plan, by period and algorithm (what a plan change keeps). */
interface KeyCounts {
  tag: string;
  counts: Count[];
  readonly byKind: Map<string, Count>;
}

const kindOf = (rule: LimitRule): string => rule.period + '/' + rule.algorithm;

/** In-process counters for the single-node (embedded) mode and for Redis outages in `open` mode. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly keys = new Map<string, KeyCounts>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepIntervalMs = 60_000) {
    // Spent counts are dropped in bulk so the map holds only live keys.
    this.sweeper = setInterval(() => this.sweep(Date.now()), sweepIntervalMs).unref();
  }

  consume(keyId: string, plan: Plan, nowMs: number): LimitDecision {
    const counts = this.countsOf(keyId, plan);
    const limits = plan.limits;
    // Refused: the refusing limit whose window ends last is reported.
    let refusedBy = -1;
    let refusedUntil = 0;
    for (let i = 0; i < limits.length; i++) {
      const count = counts[i]!;
      if (count.used(nowMs) < limits[i]!.limit) continue;
      const resetMs = count.resetMs(nowMs);
      if (refusedBy < 0 || resetMs > refusedUntil) {
        refusedBy = i;
        refusedUntil = resetMs;
      }
    }
    if (refusedBy >= 0) return { allowed: false, rule: limits[refusedBy]!, remaining: 0, resetMs: refusedUntil };
    // Admitted: counted in every limit; the one with the fewest left is reported.
    let best = -1;
    let bestRemaining = 0;
    let bestResetMs = 0;
    for (let i = 0; i < limits.length; i++) {
      const count = counts[i]!;
      count.add(nowMs);
      const remaining = limits[i]!.limit - count.used(nowMs);
      const resetMs = count.resetMs(nowMs);
      if (best < 0 || isTighter(remaining, resetMs, bestRemaining, bestResetMs)) {
        best = i;
        bestRemaining = remaining;
        bestResetMs = resetMs;
      }
    }
    return { allowed: true, rule: limits[best]!, remaining: bestRemaining, resetMs: bestResetMs };
  }

  peek(keyId: string, plan: Plan, nowMs: number): Promise<LimitState[]> {
    const counts = this.countsOf(keyId, plan);
    return Promise.resolve(plan.limits.map((rule, i) => stateOf(rule, counts[i]!, nowMs)));
  }

  private countsOf(keyId: string, plan: Plan): Count[] {
    let key = this.keys.get(keyId);
    if (key === undefined) {
      key = { tag: '', counts: [], byKind: new Map() };
      this.keys.set(keyId, key);
    }
    if (key.tag !== plan.tag) {
      // A changed plan keeps what the current windows have spent: counts are kept by period and algorithm.
      const byKind = key.byKind;
      key.counts = plan.limits.map((rule) => {
        let count = byKind.get(kindOf(rule));
        if (count === undefined) byKind.set(kindOf(rule), (count = rule.algorithm === 'fixed' ? new FixedCount(rule.period) : new SlidingCount(rule.period)));
        return count;
      });
      key.tag = plan.tag;
    }
    return key.counts;
  }

  private sweep(nowMs: number): void {
    for (const [keyId, key] of this.keys) {
      for (const [kind, count] of key.byKind) if (count.spent(nowMs)) key.byKind.delete(kind);
      if (key.byKind.size === 0) this.keys.delete(keyId);
      else key.tag = ''; // counts of its plan may be gone: rebuild them on the next request
    }
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}

function stateOf(rule: LimitRule, count: Count, nowMs: number): LimitState {
  return { rule, remaining: Math.max(0, rule.limit - count.used(nowMs)), resetMs: count.resetMs(nowMs) };
}
