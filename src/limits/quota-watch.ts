/**
 * `quota.threshold` as the limiters charge (docs/guides/webhooks.md, docs/decisions/0052): a key's or consumer's
 * limit of an hour or longer reaching 80 % and 100 % of its window. A watch sits beside the counts of
 * one subject's limits and knows, per limit, the count at which the next threshold is reached: the
 * request path compares each admitted request's place in a count with that number and does nothing
 * else. Only the request whose place reaches it calls `reached`, which tells the limit's notices and
 * moves the number on. What is told goes to the outbox from a background task (notice-writer.ts).
 */
import type { LimitRule } from '../plans/plan.js';
import type { Scope } from '../plans/subject.js';
import type { Window } from '../plans/window.js';
import type { LimitNotices } from './limit-notices.js';
import {
  isWatched,
  QUOTA_THRESHOLDS,
  thresholdCount,
  thresholdWindow,
  windowGivesWayAt,
} from './quota-thresholds.js';

/** The thresholds of one subject's limits, in the windows that held `atMs`. */
export class QuotaWatch {
  /**
   * Per limit: the count at which it reaches a threshold not yet told in its window; Infinity when none
   * is left, or for a limit shorter than an hour. The request path compares each admitted request's
   * place in the limit's count (the count once it is charged) with it.
   */
  readonly nextAt: number[];
  /** When a window watched gives way to the next: a watch is for its windows only (the memory limiter builds a new one then). */
  readonly renewAt: number;
  private readonly windows: (Window | undefined)[];
  /** Per limit: how many of QUOTA_THRESHOLDS were told. */
  private readonly told: number[];

  private constructor(
    private readonly scope: Scope,
    private readonly id: string,
    private readonly limits: readonly LimitRule[],
    atMs: number,
    private readonly notices: LimitNotices,
  ) {
    this.windows = limits.map((rule) => (isWatched(rule) ? thresholdWindow(rule, atMs) : undefined));
    this.told = limits.map(() => 0);
    this.nextAt = limits.map((rule) =>
      isWatched(rule) ? thresholdCount(rule.limit, QUOTA_THRESHOLDS[0]) : Infinity,
    );
    let renewAt = Infinity;
    limits.forEach((rule, j) => {
      const window = this.windows[j];
      if (window !== undefined) renewAt = Math.min(renewAt, windowGivesWayAt(rule, window));
    });
    this.renewAt = renewAt;
  }

  /** The watch of a subject's limits at `atMs`; undefined when nobody listens or none of its limits is an hour or longer. */
  static of(
    scope: Scope,
    id: string,
    limits: readonly LimitRule[],
    atMs: number,
    notices: LimitNotices | undefined,
  ): QuotaWatch | undefined {
    if (notices === undefined || !limits.some(isWatched)) return undefined;
    return new QuotaWatch(scope, id, limits, atMs, notices);
  }

  /**
   * Limit j's count reached `count` (at least nextAt[j]) with a request charged at `nowMs`: tells every
   * threshold it reached that was not told yet, and watches for the next.
   */
  reached(j: number, count: number, nowMs: number): void {
    const rule = this.limits[j]!;
    const window = this.windows[j]!;
    let told = this.told[j]!;
    while (told < QUOTA_THRESHOLDS.length && count >= thresholdCount(rule.limit, QUOTA_THRESHOLDS[told]!)) {
      this.notices.quotaReached(this.scope, this.id, rule, window, QUOTA_THRESHOLDS[told]!, nowMs);
      told++;
    }
    this.told[j] = told;
    this.nextAt[j] =
      told < QUOTA_THRESHOLDS.length ? thresholdCount(rule.limit, QUOTA_THRESHOLDS[told]!) : Infinity;
  }
}
