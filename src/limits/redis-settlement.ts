import { windowOf } from '../plans/balance.js';
import type { LimitRule } from '../plans/plan.js';
import { windowAt } from '../plans/window.js';
import type { Reservation } from './rate-limiter.js';
import {
  balanceKey,
  countsBase,
  EXPIRY_GRACE_MS,
  hashTagOf,
  limitCountKey,
  settleMarkBase,
} from './limiter-keys.js';
import type { SettleCall, SettleLimit } from './settle-script.js';
import { slotAt, slotLeavesAt } from './sliding-window.js';
import { bucketPeriodMs } from './token-bucket.js';

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

/**
 * The counts and balances `reservation` was charged to, under the names the consume script charged
 * (limiter-keys.ts): each fixed limit's window and each sliding limit's slot of its admission, each
 * token bucket, each balance in the period of its admission; no concurrency limit (places are not units).
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
      if (rule.algorithm === 'concurrency') continue;
      if (rule.algorithm === 'fixed') {
        const { start, end } = windowAt(rule.period, admittedMs);
        const count = limitCountKey(base, rule, start, visitor);
        windows.push({ count, slot: -1, expiresAt: end + EXPIRY_GRACE_MS });
        counts.push(count);
        call.limits.push({ algorithm: 'fixed' });
      } else if (rule.algorithm === 'sliding') {
        const slot = slotAt(rule.period, admittedMs);
        const count = limitCountKey(base, rule, 0, visitor);
        windows.push({ count, slot, expiresAt: slotLeavesAt(rule.period, slot) + EXPIRY_GRACE_MS });
        counts.push(count);
        call.limits.push({ algorithm: 'sliding', slot: String(slot) });
      } else {
        const count = limitCountKey(base, rule, 0, visitor);
        buckets.push({ count, rule });
        counts.push(count);
        call.limits.push({
          algorithm: 'tokenBucket',
          limit: rule.burst!,
          rate: rule.limit,
          periodMs: bucketPeriodMs(rule),
        });
      }
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
