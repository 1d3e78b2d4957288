import { remainingOf, settle, type Balance, type HeldBalance } from '../../plans/balance.js';
import type { Scope } from '../../plans/subject.js';
import { balanceStateOf, type BalanceState } from '../rate-limiter.js';

/** One balance's answer to a request of some cost, as the combiner (combine.ts) reads it. */
export interface BalanceVerdict {
  /** It holds the cost. */
  readonly fits: boolean;
  /** As it stands before the request. */
  readonly before: BalanceState;
}

/**
 * What a store holds of a balance (undefined: nothing yet, or lost) brought up to its record at
 * `nowMs` (settle, src/plans/balance.ts): the same record, updated in place, as a limit's state is
 * (decision record 0178), or a new one when a new epoch or window starts.
 */
export const balanceAt = (held: HeldBalance | undefined, balance: Balance, nowMs: number): HeldBalance =>
  settle(held, balance, nowMs);

/** What `held` (brought up to `nowMs`) says of a request of `cost`. */
export function balanceVerdictOf(
  scope: Scope,
  balance: Balance,
  held: HeldBalance,
  cost: number,
  nowMs: number,
): BalanceVerdict {
  const remaining = remainingOf(held);
  return { fits: remaining >= cost, before: balanceStateOf(scope, balance, remaining, nowMs) };
}

/**
 * `held` (brought up to now) with `delta` more spent, for a request charged in the balance's period of
 * epoch `epoch` and window `window`: nothing when that period is over (a set or a refill started
 * another count). The balance may so end below 0. A refund (negative) is granted back rather than
 * taken from `spent`, which only grows: what replicas saw spent tells a lost balance
 * (limits/recovery/balance-ledger.ts), and must not look lost after a refund (docs/decisions/0191).
 */
export function balanceSettled(held: HeldBalance, delta: number, epoch: number, window: number): HeldBalance {
  if (held.epoch !== epoch || held.window !== window) return held;
  if (delta > 0) held.spent += delta;
  else held.granted -= delta;
  return held;
}

/** `held` with `cost` spent (the same record). */
export function balanceCharged(held: HeldBalance, cost: number): HeldBalance {
  held.spent += cost;
  return held;
}
