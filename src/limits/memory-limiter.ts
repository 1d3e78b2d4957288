import { remainingOf, settle, type HeldBalance } from '../plans/balance.js';
import { capacityOf, countsOwnRequests, type LimitRule, type Plan } from '../plans/plan.js';
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
  PLACE_RETRY_MS,
  unitsIn,
} from './rate-limiter.js';
import { fullBucket, holdsAt, refilled, type Bucket } from './token-bucket.js';
import type { Scope, Subject } from '../plans/subject.js';
import { oldestCounted, slidingResetAt, SLOTS, slotAt } from './sliding-window.js';
import { CreditWatch } from './credit-watch.js';
import type { LimitNotices } from './limit-notices.js';
import { QuotaWatch } from './quota-watch.js';
import { windowAt, type Period } from '../plans/window.js';
import { visitorSuffix, type Visitor } from './visitor.js';

/** One limit's count for one subject, in process. */
interface Count {
  /** Units counted where `nowMs` falls. */
  used(nowMs: number): number;
  /** Adds `units` where the last `used` read. */
  add(units: number): void;
  /**
   * When it has more room (LimitState.resetMs), given `used(nowMs)` was just read: for a token
   * bucket, when it holds `units`.
   */
  resetMs(nowMs: number, units: number): number;
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

/** A token bucket (token-bucket.ts): `used` is what it lacks of its burst. */
class BucketCount implements Count {
  private bucket: Bucket | undefined;

  /** The rule of the latest plan that counts in it: a changed plan keeps the units it holds. */
  constructor(public rule: LimitRule) {}

  used(nowMs: number): number {
    const bucket = (this.bucket = refilled(this.bucket ?? fullBucket(this.rule, nowMs), this.rule, nowMs));
    return capacityOf(this.rule) - Math.min(bucket.units, capacityOf(this.rule));
  }

  add(units: number): void {
    const bucket = this.bucket!;
    this.bucket = { ...bucket, units: Math.min(bucket.units, capacityOf(this.rule)) - units };
  }

  resetMs(_nowMs: number, units: number): number {
    return holdsAt(this.bucket!, this.rule, units);
  }

  spent(nowMs: number): boolean {
    return this.used(nowMs) === 0;
  }
}

/** Requests in flight (docs/decisions/0096): a place is taken by `add` and given back by `release`. */
class PlacesCount implements Count {
  private places = 0;

  used(): number {
    return this.places;
  }

  add(places: number): void {
    this.places += places;
  }

  release(): void {
    this.places--;
  }

  resetMs(nowMs: number): number {
    return nowMs + PLACE_RETRY_MS;
  }

  spent(): boolean {
    return this.places === 0;
  }
}

/** The counts of one selection of a subject's limits, and their thresholds (undefined: none watched). */
interface Tally {
  readonly counts: Count[];
  watch: QuotaWatch | undefined;
}

/**
 * A subject's counts by kind (what a plan change keeps), and the counts of each selection of its limits
 * by plan tag (a key whose limits match requests alternates between selections), and visitor for a plan
 * with limits per visitor: each visitor's counts are kinds of their own (visitorSuffix), dropped by the
 * sweep once their windows end, so the maps hold the visitors of the current windows only.
 */
interface SubjectCounts {
  readonly byKind: Map<string, Count>;
  readonly byTag: Map<string, Tally>;
}

/** Limits of one kind count the same requests: those with a match count their own, by name; those per visitor, the visitor's. */
const kindOf = (rule: LimitRule, visitor: Visitor | undefined): string =>
  rule.period +
  '/' +
  rule.algorithm +
  (countsOwnRequests(rule) ? '/' + rule.name : '') +
  visitorSuffix(rule, visitor);

function countOf(rule: LimitRule): Count {
  switch (rule.algorithm) {
    case 'fixed':
      return new FixedCount(rule.period);
    case 'sliding':
      return new SlidingCount(rule.period);
    case 'tokenBucket':
      return new BucketCount(rule);
    case 'concurrency':
      return new PlacesCount();
  }
}

/** Gives back one place in each of `places`, the first time it is called. */
function releaseOnce(places: readonly PlacesCount[]): () => void {
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    for (const count of places) count.release();
  };
}

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
   * cost); `sweepIntervalMs`: how often spent counts are dropped; `clock`: the one callers' `nowMs`
   * comes from (the app's), which says when a count is spent.
   */
  constructor({
    notices,
    sweepIntervalMs = 60_000,
    clock = Date.now,
  }: {
    readonly notices?: LimitNotices;
    readonly sweepIntervalMs?: number;
    readonly clock?: () => number;
  } = {}) {
    this.notices = notices;
    this.creditWatch = notices && new CreditWatch(notices);
    // Spent counts are dropped in bulk so the maps hold only live subjects.
    this.sweeper = setInterval(() => this.sweep(clock()), sweepIntervalMs).unref();
  }

  consume(
    subjects: readonly Subject[],
    cost: number,
    nowMs: number,
    states?: LimitState[],
    visitor?: Visitor,
  ): Decision {
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
      const counts = (tallies[s] = this.tallyOf(subject, nowMs, visitor)).counts;
      const limits = subject.plan.limits;
      for (let i = 0; i < limits.length; i++) {
        const units = unitsIn(limits[i]!, cost);
        const room = capacityOf(limits[i]!) - counts[i]!.used(nowMs);
        if (room >= units) continue;
        const until = counts[i]!.resetMs(nowMs, units);
        if (by !== undefined && until <= resetMs) continue;
        by = subject;
        at = i;
        left = room;
        resetMs = until;
      }
    }
    if (short !== undefined || by !== undefined) {
      if (states !== undefined) this.report(subjects, nowMs, states, visitor);
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
    let places: PlacesCount[] | undefined;
    for (let s = 0; s < subjects.length; s++) {
      const subject = subjects[s]!;
      const tally = tallies[s]!;
      const counts = tally.counts;
      const limits = subject.plan.limits;
      let watch = tally.watch;
      if (watch !== undefined && nowMs >= watch.renewAt)
        watch = tally.watch = QuotaWatch.of(subject.scope, subject.id, limits, nowMs, this.notices);
      for (let i = 0; i < limits.length; i++) {
        const count = counts[i]!;
        count.add(unitsIn(limits[i]!, cost));
        if (count instanceof PlacesCount) (places ??= []).push(count);
        const used = count.used(nowMs);
        if (watch !== undefined && used >= watch.nextAt[i]!) watch.reached(i, used, nowMs);
        const remaining = capacityOf(limits[i]!) - used;
        const until = count.resetMs(nowMs, 1);
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
    if (states !== undefined) this.report(subjects, nowMs, states, visitor);
    const decision: Decision = {
      allowed: true,
      limit: by && { scope: by.scope, rule: by.plan.limits[at]!, remaining: left, resetMs },
      balance: lowest,
    };
    return places === undefined ? decision : { ...decision, release: releaseOnce(places) };
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

  /** Every limit's state, subject by subject (a limit per visitor: `visitor`'s). */
  private report(subjects: readonly Subject[], nowMs: number, into: LimitState[], visitor?: Visitor): void {
    for (const subject of subjects) {
      const { counts } = this.tallyOf(subject, nowMs, visitor);
      subject.plan.limits.forEach((rule, i) =>
        into.push({
          scope: subject.scope,
          rule,
          remaining: Math.max(0, capacityOf(rule) - counts[i]!.used(nowMs)),
          resetMs: counts[i]!.resetMs(nowMs, 1),
        }),
      );
    }
  }

  private tallyOf({ scope, id, plan }: Subject, nowMs: number, visitor: Visitor | undefined): Tally {
    const bySubject = this.subjects[scope];
    let subject = bySubject.get(id);
    if (subject === undefined) {
      subject = { byKind: new Map(), byTag: new Map() };
      bySubject.set(id, subject);
    }
    const tag = plan.perVisitor && visitor !== undefined ? plan.tag + '|' + visitor.name : plan.tag;
    let tally = subject.byTag.get(tag);
    if (tally === undefined) {
      tally = {
        counts: this.countsFor(subject, plan, visitor),
        watch: QuotaWatch.of(scope, id, plan.limits, nowMs, this.notices),
      };
      subject.byTag.set(tag, tally);
    }
    return tally;
  }

  /** A changed plan keeps what the current windows have spent: counts are kept by kind. */
  private countsFor(subject: SubjectCounts, plan: Plan, visitor: Visitor | undefined): Count[] {
    const byKind = subject.byKind;
    return plan.limits.map((rule) => {
      const kind = kindOf(rule, visitor);
      let count = byKind.get(kind);
      if (count === undefined) byKind.set(kind, (count = countOf(rule)));
      else if (count instanceof BucketCount) count.rule = rule;
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
