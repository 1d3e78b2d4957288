import { remainingOf, settle, type HeldBalance } from '../plans/balance.js';
import { countsOwnRequests, type LimitRule, type Plan } from '../plans/plan.js';
import {
  balanceStateOf,
  checkCost,
  checkSubjects,
  isTighter,
  type BalanceState,
  type Decision,
  type LimitState,
  type RateLimiter,
  type SpentBalance,
} from './rate-limiter.js';
import type { Scope, Subject } from '../plans/subject.js';
import { oldestCounted, slidingResetAt, SLOTS, slotAt } from './sliding-window.js';
import { CreditWatch } from './credit-watch.js';
import type { LimitNotices } from './limit-notices.js';
import { QuotaWatch } from './quota-watch.js';
import { windowAt, type Period } from '../plans/window.js';

/** One limit's count for one subject, in process. */
interface Count {
  /** Units counted where `nowMs` falls. */
  used(nowMs: number): number;
  /** Adds `units` where the last `used` read. */
  add(units: number): void;
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

  add(units: number): void {
    this.count += units;
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

  add(units: number): void {
    this.slots[this.newest % (SLOTS + 1)]! += units;
    this.total += units;
  }

  resetMs(): number {
    for (let s = oldestCounted(this.newest); s < this.newest; s++) {
      if (this.slots[s % (SLOTS + 1)]! > 0) return slidingResetAt(this.period, s);
    }
    return slidingResetAt(this.period, this.newest);
  }

  spent(nowMs: number): boolean {
    return this.total === 0 || oldestCounted(slotAt(this.period, nowMs)) > this.newest;
  }
}

/** The counts of one selection of a subject's limits, and their thresholds (undefined: none watched). */
interface Tally {
  readonly counts: Count[];
  watch: QuotaWatch | undefined;
}

/**
 * A subject's counts by kind (what a plan change keeps), and the counts of each selection of its limits
 * by plan tag (a key whose limits match requests alternates between selections).
 */
interface SubjectCounts {
  readonly byKind: Map<string, Count>;
  readonly byTag: Map<string, Tally>;
}

/** Limits of one kind count the same requests: those with a match count their own, by name. */
const kindOf = (rule: LimitRule): string =>
  rule.period + '/' + rule.algorithm + (countsOwnRequests(rule) ? '/' + rule.name : '');

/** In-process counters for the single-node (embedded) mode and for Redis outages in `open` mode. */
export class MemoryRateLimiter implements RateLimiter {
  /** Each subject's counts, by scope and id. */
  private readonly subjects: Record<Scope, Map<string, SubjectCounts>> = {
    key: new Map(),
    consumer: new Map(),
  };
  private readonly sweeper: NodeJS.Timeout;
  /** Each subject's counts for the decision under way (scratch: consume fills and reads it at once). */
  private readonly scratch: Tally[] = [];
  /** Each subject's balance for the decision under way, likewise. */
  private readonly heldScratch: (HeldBalance | undefined)[] = [];
  /**
   * What this process holds of each balance, by scope and id. Never swept: a balance is money, kept
   * while the process lives; the database keeps what was spent (spentBalances) for the next one.
   */
  private readonly balances: Record<Scope, Map<string, HeldBalance>> = {
    key: new Map(),
    consumer: new Map(),
  };
  /** The ids of the subjects whose balances were charged since the last `spentBalances`, by scope. */
  private readonly charged: Record<Scope, Set<string>> = { key: new Set(), consumer: new Set() };

  private readonly notices: LimitNotices | undefined;
  private readonly creditWatch: CreditWatch | undefined;

  /**
   * `notices`: where quota thresholds and low or exhausted balances are told (absent: nowhere, at no
   * cost); `sweepIntervalMs`: how often spent counts are dropped.
   */
  constructor({
    notices,
    sweepIntervalMs = 60_000,
  }: { readonly notices?: LimitNotices; readonly sweepIntervalMs?: number } = {}) {
    this.notices = notices;
    this.creditWatch = notices && new CreditWatch(notices);
    // Spent counts are dropped in bulk so the maps hold only live subjects.
    this.sweeper = setInterval(() => this.sweep(Date.now()), sweepIntervalMs).unref();
  }

  consume(subjects: readonly Subject[], cost: number, nowMs: number, states?: LimitState[]): Decision {
    checkCost(cost);
    checkSubjects(subjects);
    // Refused when a balance does not hold the cost (the key's first), else when a limit lacks room for
    // it: the refusing limit whose window ends last is reported.
    const held = this.heldScratch;
    let short: BalanceState | undefined;
    for (let s = 0; s < subjects.length; s++) {
      const subject = subjects[s]!;
      const h = (held[s] = subject.balance && this.heldOf(subject, nowMs));
      if (h !== undefined && short === undefined && remainingOf(h) < cost) {
        short = balanceStateOf(subject.scope, subject.balance!, remainingOf(h), nowMs);
        this.creditWatch?.saw(subject.scope, subject.id, subject.balance!, h, remainingOf(h), true, nowMs);
      }
    }
    let by: Subject | undefined;
    let at = 0;
    let left = 0;
    let resetMs = 0;
    const tallies = this.scratch;
    for (let s = 0; s < subjects.length; s++) {
      const subject = subjects[s]!;
      const counts = (tallies[s] = this.tallyOf(subject, nowMs)).counts;
      const limits = subject.plan.limits;
      for (let i = 0; i < limits.length; i++) {
        const room = limits[i]!.limit - counts[i]!.used(nowMs);
        if (room >= cost) continue;
        const until = counts[i]!.resetMs(nowMs);
        if (by !== undefined && until <= resetMs) continue;
        by = subject;
        at = i;
        left = room;
        resetMs = until;
      }
    }
    if (short !== undefined || by !== undefined) {
      if (states !== undefined) this.report(subjects, nowMs, states);
      return {
        allowed: false,
        limit:
          short === undefined
            ? { scope: by!.scope, rule: by!.plan.limits[at]!, remaining: Math.max(0, left), resetMs }
            : undefined,
        balance: short,
      };
    }
    // Admitted: charged to every limit and balance; the limit and the balance with the fewest left are reported.
    for (let s = 0; s < subjects.length; s++) {
      const subject = subjects[s]!;
      const tally = tallies[s]!;
      const counts = tally.counts;
      const limits = subject.plan.limits;
      let watch = tally.watch;
      if (watch !== undefined && nowMs >= watch.renewAt)
        watch = tally.watch = QuotaWatch.of(subject.scope, subject.id, limits, nowMs, this.notices);
      for (let i = 0; i < limits.length; i++) {
        counts[i]!.add(cost);
        const used = counts[i]!.used(nowMs);
        if (watch !== undefined && used >= watch.nextAt[i]!) watch.reached(i, used, nowMs);
        const remaining = limits[i]!.limit - used;
        const until = counts[i]!.resetMs(nowMs);
        if (by !== undefined && !isTighter(remaining, until, left, resetMs)) continue;
        by = subject;
        at = i;
        left = remaining;
        resetMs = until;
      }
    }
    let lowest: BalanceState | undefined;
    for (let s = 0; s < subjects.length; s++) {
      const h = held[s];
      if (h === undefined) continue;
      h.spent += cost;
      this.charged[subjects[s]!.scope].add(subjects[s]!.id);
      this.creditWatch?.saw(
        subjects[s]!.scope,
        subjects[s]!.id,
        subjects[s]!.balance!,
        h,
        remainingOf(h),
        false,
        nowMs,
      );
      if (lowest === undefined || remainingOf(h) < lowest.remaining)
        lowest = balanceStateOf(subjects[s]!.scope, subjects[s]!.balance!, remainingOf(h), nowMs);
    }
    if (states !== undefined) this.report(subjects, nowMs, states);
    return {
      allowed: true,
      limit: by && { scope: by.scope, rule: by.plan.limits[at]!, remaining: left, resetMs },
      balance: lowest,
    };
  }

  peekBalances(subjects: readonly Subject[], nowMs: number): Promise<BalanceState[]> {
    const states: BalanceState[] = [];
    for (const subject of subjects) {
      if (subject.balance === undefined) continue;
      states.push(
        balanceStateOf(subject.scope, subject.balance, remainingOf(this.heldOf(subject, nowMs)), nowMs),
      );
    }
    return Promise.resolve(states);
  }

  syncBalances(subjects: readonly Subject[], nowMs: number): Promise<void> {
    for (const subject of subjects) if (subject.balance !== undefined) this.heldOf(subject, nowMs);
    return Promise.resolve();
  }

  spentBalances(): SpentBalance[] {
    const spent: SpentBalance[] = [];
    for (const scope of ['key', 'consumer'] as const) {
      for (const id of this.charged[scope]) {
        const { epoch, window, spent: units } = this.balances[scope].get(id)!;
        spent.push({ scope, id, epoch, window, spent: units });
      }
      this.charged[scope].clear();
    }
    return spent;
  }

  /** What this process holds of a subject's balance, brought up to its record and to `nowMs`. */
  private heldOf(subject: Subject, nowMs: number): HeldBalance {
    const byId = this.balances[subject.scope];
    const h = settle(byId.get(subject.id), subject.balance!, nowMs);
    byId.set(subject.id, h);
    return h;
  }

  peek(subjects: readonly Subject[], nowMs: number): Promise<LimitState[]> {
    const states: LimitState[] = [];
    this.report(subjects, nowMs, states);
    return Promise.resolve(states);
  }

  /** Every limit's state, subject by subject. */
  private report(subjects: readonly Subject[], nowMs: number, into: LimitState[]): void {
    for (const subject of subjects) {
      const { counts } = this.tallyOf(subject, nowMs);
      subject.plan.limits.forEach((rule, i) =>
        into.push({
          scope: subject.scope,
          rule,
          remaining: Math.max(0, rule.limit - counts[i]!.used(nowMs)),
          resetMs: counts[i]!.resetMs(nowMs),
        }),
      );
    }
  }

  private tallyOf({ scope, id, plan }: Subject, nowMs: number): Tally {
    const bySubject = this.subjects[scope];
    let subject = bySubject.get(id);
    if (subject === undefined) {
      subject = { byKind: new Map(), byTag: new Map() };
      bySubject.set(id, subject);
    }
    let tally = subject.byTag.get(plan.tag);
    if (tally === undefined) {
      tally = {
        counts: this.countsFor(subject, plan),
        watch: QuotaWatch.of(scope, id, plan.limits, nowMs, this.notices),
      };
      subject.byTag.set(plan.tag, tally);
    }
    return tally;
  }

  /** A changed plan keeps what the current windows have spent: counts are kept by kind. */
  private countsFor(subject: SubjectCounts, plan: Plan): Count[] {
    const byKind = subject.byKind;
    return plan.limits.map((rule) => {
      let count = byKind.get(kindOf(rule));
      if (count === undefined)
        byKind.set(
          kindOf(rule),
          (count = rule.algorithm === 'fixed' ? new FixedCount(rule.period) : new SlidingCount(rule.period)),
        );
      return count;
    });
  }

  private sweep(nowMs: number): void {
    for (const bySubject of Object.values(this.subjects)) {
      for (const [id, subject] of bySubject) {
        for (const [kind, count] of subject.byKind) if (count.spent(nowMs)) subject.byKind.delete(kind);
        if (subject.byKind.size === 0) bySubject.delete(id);
        else subject.byTag.clear(); // counts of its selections may be gone: rebuild them on the next request
      }
    }
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}
