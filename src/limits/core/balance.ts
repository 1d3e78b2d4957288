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
 * `nowMs` (settle, src/plans/balance.ts): a new value, the store's own left as it was.
 */
export const balanceAt = (held: HeldBalance | undefined, balance: Balance, nowMs: number): HeldBalance =>
  settle(held === undefined ? undefined : { ...held }, balance, nowMs);

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

/** `held` with `cost` spent. */
export const balanceCharged = (held: HeldBalance, cost: number): HeldBalance => ({
  ...held,
  spent: held.spent + cost,
});
