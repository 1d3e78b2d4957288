import { holdingOf, remainingOf, windowOf, type HeldBalance } from '../plans/balance.js';
import { capacityOf, countsOwnRequests, type LimitRule, type Plan } from '../plans/plan.js';
import {
  balanceStateOf,
  checkCost,
  checkSubjects,
  type BalanceState,
  type Decision,
  type LimitState,
  type RateLimiter,
  type Reservation,
  type SpentBalance,
  unitsIn,
} from './rate-limiter.js';
import type { Scope, Subject } from '../plans/subject.js';
import { CreditWatch } from './credit-watch.js';
import type { LimitNotices } from './limit-notices.js';
import { QuotaWatch } from './quota-watch.js';
import { visitorSuffix, type Visitor } from './visitor.js';
import { ALGORITHM_OF } from './core/algorithms.js';
import { verdictOf, type LimitAlgorithm, type VerdictRecord } from './core/limit-algorithm.js';
import {
  balanceAt,
  balanceCharged,
  balanceSettled,
  balanceVerdictOf,
  type BalanceVerdict,
} from './core/balance.js';
import { admissionOf, refusalOf, standing } from './core/combine.js';
import { released } from './core/concurrency.js';
import { switchedStates } from './core/plan-switch.js';
import { wholeOf } from '../plans/plan.js';

/**
 * One limit's state for one subject, in process, as its algorithm (core/) counts it; `rule` is the
 * latest plan's that counts in it (a changed plan keeps what it counted).
 */
interface Cell {
  readonly algorithm: LimitAlgorithm<unknown>;
  rule: LimitRule;
  state: unknown;
}

/** The cells of one selection of a subject's limits, and their thresholds (undefined: none watched). */
interface Tally {
  readonly cells: Cell[];
  watch: QuotaWatch | undefined;
}

/**
 * A subject's cells by kind (what a plan change keeps), and the cells of each selection of its limits
 * by plan tag (a key whose limits match requests alternates between selections), and visitor for a plan
 * with limits per visitor: each visitor's cells are kinds of their own (visitorSuffix), dropped by the
 * sweep once their windows end, so the maps hold the visitors of the current windows only.
 */
interface SubjectCounts {
  readonly byKind: Map<string, Cell>;
  readonly byTag: Map<string, Tally>;
  /** The tag of the whole plan it was last decided under: another is a switch (core/plan-switch.ts). */
  planTag: string;
}

/** Limits of one kind count the same requests: those with a match count their own, by name; those per visitor, the visitor's. */
const kindOf = (rule: LimitRule, visitor: Visitor | undefined): string =>
  rule.period +
  '/' +
  rule.algorithm +
  (countsOwnRequests(rule) ? '/' + rule.name : '') +
  visitorSuffix(rule, visitor);

const NO_BALANCES: readonly BalanceState[] = [];

/** The cell of `rule`'s kind, made when first needed; it counts under `rule` from now on. */
function cellOf(byKind: Map<string, Cell>, rule: LimitRule, visitor: Visitor | undefined): Cell {
  const kind = kindOf(rule, visitor);
  let cell = byKind.get(kind);
  if (cell === undefined)
    byKind.set(kind, (cell = { algorithm: ALGORITHM_OF[rule.algorithm], rule, state: undefined }));
  else cell.rule = rule;
  return cell;
}

/** Gives back one place in each of `places` (concurrency cells), the first time it is called. */
function releaseOnce(places: readonly Cell[]): () => void {
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    for (const cell of places) cell.state = released(cell.state as number);
  };
}

/** In-process counters for the single-node (embedded) mode and for Redis outages in `open` mode. */
export class MemoryRateLimiter implements RateLimiter {
  /** Each subject's cells, by scope and id. */
  private readonly subjects: Record<Scope, Map<string, SubjectCounts>> = {
    key: new Map(),
    consumer: new Map(),
  };
  private readonly sweeper: NodeJS.Timeout;
  /**
   * Scratch, written by index within one decision and read up to that decision's counts, kept from one
   * decision to the next so that deciding allocates little (emptying an array and filling it again
   * costs more than the decision: docs/performance.md): each subject's balance and tally, each
   * balance's verdict, and every limit's verdict (records filled again each time).
   */
  private readonly scratch = {
    held: [] as (HeldBalance | undefined)[],
    tallies: [] as Tally[],
    balanceVerdicts: [] as BalanceVerdict[],
    verdicts: [] as VerdictRecord[],
  };
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

  /** Decided by the core (core/): each limit's and balance's verdict, combined; charged when admitted. */
  consume(subjects: readonly Subject[], cost: number, nowMs: number, visitor?: Visitor): Decision {
    checkCost(cost);
    checkSubjects(subjects);
    const { held, tallies, balanceVerdicts, verdicts } = this.scratch;
    let limitCount = 0;
    let balanceCount = 0;
    for (let s = 0; s < subjects.length; s++) {
      const subject = subjects[s]!;
      const h = (held[s] = subject.balance && this.heldOf(subject, nowMs));
      if (h !== undefined)
        balanceVerdicts[balanceCount++] = balanceVerdictOf(subject.scope, subject.balance!, h, cost, nowMs);
      const tally = (tallies[s] = this.tallyOf(subject, nowMs, visitor));
      const limits = subject.plan.limits;
      for (let i = 0; i < limits.length; i++) {
        const cell = tally.cells[i]!;
        const rule = limits[i]!;
        cell.state = cell.algorithm.at(cell.state, rule, nowMs);
        const record = (verdicts[limitCount++] ??= {} as VerdictRecord);
        verdictOf(cell.algorithm, subject.scope, rule, cell.state, unitsIn(rule, cost), nowMs, record);
      }
    }
    const refusal = refusalOf(verdicts, balanceVerdicts, limitCount, balanceCount);
    if (refusal !== undefined) {
      if (refusal.balance !== undefined) this.sawShort(subjects, held, refusal.balance, nowMs);
      return refusal;
    }
    const states = new Array<LimitState>(limitCount);
    let k = 0;
    let balanceStates: BalanceState[] | undefined;
    let places: Cell[] | undefined;
    for (let s = 0; s < subjects.length; s++) {
      const subject = subjects[s]!;
      const tally = tallies[s]!;
      const limits = subject.plan.limits;
      let watch = tally.watch;
      if (watch !== undefined && nowMs >= watch.renewAt)
        watch = tally.watch = QuotaWatch.of(subject.scope, subject.id, limits, nowMs, this.notices);
      for (let i = 0; i < limits.length; i++) {
        const rule = limits[i]!;
        const cell = tally.cells[i]!;
        const state = (cell.state = cell.algorithm.charged(cell.state, rule, unitsIn(rule, cost)));
        if (rule.algorithm === 'concurrency') (places ??= []).push(cell);
        const used = cell.algorithm.used(state, rule);
        if (watch !== undefined && used >= watch.nextAt[i]!) watch.reached(i, used, nowMs);
        const resetMs = cell.algorithm.resetMs(state, rule, nowMs, 1);
        states[k++] = { scope: subject.scope, rule, remaining: capacityOf(rule) - used, resetMs };
      }
      const h = held[s];
      if (h === undefined) continue;
      // The record this.balances holds (heldOf), charged in place.
      const after = balanceCharged(h, cost);
      this.charged[subject.scope].add(subject.id);
      this.creditWatch?.saw(
        subject.scope,
        subject.id,
        subject.balance!,
        after,
        remainingOf(after),
        false,
        nowMs,
      );
      (balanceStates ??= []).push(balanceStateOf(subject.scope, subject.balance!, remainingOf(after), nowMs));
    }
    return admissionOf(states, balanceStates ?? NO_BALANCES, places && releaseOnce(places));
  }

  /** Settled by the core: each limit's `settled` and `balanceSettled`, in the cells and balances it was charged to. */
  settle({ subjects, visitor, reserved, admittedMs }: Reservation, units: number, nowMs: number): void {
    const delta = units - reserved;
    if (delta === 0) return;
    for (const subject of subjects) {
      const { cells } = this.tallyOf(subject, nowMs, visitor);
      subject.plan.limits.forEach((rule, i) => {
        const cell = cells[i]!;
        cell.state = cell.algorithm.settled(
          cell.algorithm.at(cell.state, rule, nowMs),
          rule,
          delta,
          admittedMs,
        );
      });
      const balance = subject.balance;
      if (balance === undefined) continue;
      const held = balanceSettled(
        this.heldOf(subject, nowMs),
        delta,
        balance.epoch,
        windowOf(balance, admittedMs),
      );
      this.charged[subject.scope].add(subject.id);
      this.creditWatch?.saw(subject.scope, subject.id, balance, held, remainingOf(held), false, nowMs);
    }
  }

  /** The balance that refused a request is told to the credit watch. */
  private sawShort(
    subjects: readonly Subject[],
    held: readonly (HeldBalance | undefined)[],
    short: BalanceState,
    nowMs: number,
  ): void {
    const s = subjects.findIndex((subject) => subject.scope === short.scope);
    const subject = subjects[s]!;
    this.creditWatch?.saw(
      subject.scope,
      subject.id,
      subject.balance!,
      held[s]!,
      short.remaining,
      true,
      nowMs,
    );
  }

  peekBalances(subjects: readonly Subject[], nowMs: number): Promise<BalanceState[]> {
    const states: BalanceState[] = [];
    for (const subject of subjects) {
      if (subject.balance === undefined) continue;
      states.push(
        balanceStateOf(subject.scope, subject.balance, holdingOf(this.heldOf(subject, nowMs)), nowMs),
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
    const h = balanceAt(byId.get(subject.id), subject.balance!, nowMs);
    byId.set(subject.id, h);
    return h;
  }

  peek(subjects: readonly Subject[], nowMs: number): Promise<LimitState[]> {
    const states: LimitState[] = [];
    for (const subject of subjects) {
      const { cells } = this.tallyOf(subject, nowMs, undefined);
      subject.plan.limits.forEach((rule, i) => {
        const cell = cells[i]!;
        cell.state = cell.algorithm.at(cell.state, rule, nowMs);
        states.push(standing(verdictOf(cell.algorithm, subject.scope, rule, cell.state, 1, nowMs)));
      });
    }
    return Promise.resolve(states);
  }

  private tallyOf({ scope, id, plan }: Subject, nowMs: number, visitor: Visitor | undefined): Tally {
    const bySubject = this.subjects[scope];
    let subject = bySubject.get(id);
    const whole = wholeOf(plan);
    if (subject === undefined) {
      subject = { byKind: new Map(), byTag: new Map(), planTag: whole.tag };
      bySubject.set(id, subject);
    } else if (subject.planTag !== whole.tag) {
      subject.planTag = whole.tag;
      this.switchPlan(subject.byKind, whole, nowMs);
    }
    const tag = plan.perVisitor && visitor !== undefined ? plan.tag + '|' + visitor.name : plan.tag;
    let tally = subject.byTag.get(tag);
    if (tally === undefined) {
      tally = {
        cells: this.cellsFor(subject, plan, visitor),
        watch: QuotaWatch.of(scope, id, plan.limits, nowMs, this.notices),
      };
      subject.byTag.set(tag, tally);
    }
    return tally;
  }

  /** A changed plan keeps what the current windows have spent: cells are kept by kind. */
  private cellsFor(subject: SubjectCounts, plan: Plan, visitor: Visitor | undefined): Cell[] {
    return plan.limits.map((rule) => cellOf(subject.byKind, rule, visitor));
  }

  /** The cells of `whole`'s limits start from what the subject's cells spent under its old plan. */
  private switchPlan(byKind: Map<string, Cell>, whole: Plan, nowMs: number): void {
    const old = [...byKind.values()].map((cell) => ({ ...cell }));
    // A limit per visitor carries nothing (its visitors' cells are apart): no cell made for it.
    const next = whole.limits
      .filter((rule) => rule.per === undefined)
      .map((rule) => cellOf(byKind, rule, undefined));
    switchedStates(old, next, nowMs).forEach((state, i) => (next[i]!.state = state));
  }

  private sweep(nowMs: number): void {
    for (const bySubject of Object.values(this.subjects)) {
      for (const [id, subject] of bySubject) {
        for (const [kind, cell] of subject.byKind)
          if (cell.state === undefined || cell.algorithm.spent(cell.state, cell.rule, nowMs))
            subject.byKind.delete(kind);
        if (subject.byKind.size === 0) bySubject.delete(id);
        else subject.byTag.clear(); // cells of its selections may be gone: rebuild them on the next request
      }
    }
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}
