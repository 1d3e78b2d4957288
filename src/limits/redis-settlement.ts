import { windowOf } from '../plans/balance.js';
import type { LimitRule } from '../plans/plan.js';
import type { Reservation } from './rate-limiter.js';
import { TWIN_OF } from './core/algorithms.js';
import { NO_HOLDER, type SettleLimit, type SpanTerms } from './core/redis-twin.js';
import { inWindows, isBucketLimit, slotOf } from './consume-script.js';
import { balanceKey, countsBase, hashTagOf, limitCountKey, settleMarkBase } from './limiter-keys.js';
import type { SettleCall } from './settle-script.js';

/** A window count a settlement changes: this replica's part of it changes by the delta (WindowLedger.add). */
export interface SettledWindow {
  readonly count: string;
  /** The sliding slot, or -1 for a fixed window. */
  readonly slot: number;
  readonly expiresAt: number;
}

/** One settlement in Redis: the script's keys and call, and what the ledgers learn of it. */
export interface Settlement {
  /** The counts, then the balances: the script's keys but its mark. */
  readonly keys: string[];
  /** Where a call's mark is named (the call's id follows), beside the counts in the same hash slot. */
  readonly markBase: string;
  readonly call: Omit<SettleCall, 'markMs'>;
  readonly windows: SettledWindow[];
  /** The token buckets, in the order the script answers them. */
  readonly buckets: { readonly count: string; readonly rule: LimitRule }[];
}

/** Where the counts of a settlement's limits began: written in place, read at once. */
const at: SpanTerms = { start: 0, end: 0, reset: 0 };

/**
 * The counts and balances `reservation` was charged to, under the names the consume script charged
 * (limiter-keys.ts), each by its algorithm's twin (core/algorithms.ts): each window and slot of its
 * admission, each token bucket, each balance in the period of its admission; no concurrency limit
 * (places are not units: its twin settles nothing).
 */
export function settlementOf(
  prefix: string,
  { subjects, visitor, admittedMs }: Reservation,
  delta: number,
  nowMs: number,
): Settlement {
  const hashTag = hashTagOf(subjects);
  const counts: string[] = [];
  const balances: string[] = [];
  const call = {
    delta,
    now: nowMs,
    limits: [] as SettleLimit[],
    balances: [] as SettleCall['balances'][number][],
  };
  const windows: SettledWindow[] = [];
  const buckets: Settlement['buckets'] = [];
  for (const subject of subjects) {
    const base = countsBase(prefix, subject, hashTag);
    for (const rule of subject.plan.limits) {
      const twin = TWIN_OF[rule.algorithm];
      const l = twin.span(rule, admittedMs, NO_HOLDER, at);
      const settled = twin.settled(l);
      if (settled === undefined) continue;
      const count = limitCountKey(base, rule, at.start, visitor);
      if (inWindows(l)) windows.push({ count, slot: slotOf(l), expiresAt: l.expiresAt });
      else if (isBucketLimit(l)) buckets.push({ count, rule });
      counts.push(count);
      call.limits.push(settled);
    }
    const balance = subject.balance;
    if (balance === undefined) continue;
    balances.push(balanceKey(base));
    call.balances.push({ epoch: balance.epoch, window: windowOf(balance, admittedMs) });
  }
  return {
    keys: [...counts, ...balances],
    markBase: settleMarkBase(prefix, hashTag),
    call,
    windows,
    buckets,
  };
}
