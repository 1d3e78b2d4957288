import { tightest, type BalanceState, type Decision, type LimitState } from '../rate-limiter.js';
import type { BalanceVerdict } from './balance.js';
import type { LimitVerdict } from './limit-algorithm.js';

/**
 * The one rule that turns the verdicts of a request's limits and balances into a decision (the rule
 * documented on `Decision`): both limiters and both of their paths (decided in process, from a lease,
 * from the consume script's reply) decide by these functions.
 */

/*
 * The verdicts are read up to a count (all of them by default): a limiter that keeps its verdict
 * records from one decision to the next passes how many this one filled.
 */

/**
 * Of the first `count` limits, those without room for the request, the one reported: whose `retryMs`
 * is latest (the earliest moment a retry can succeed), the first of equals; undefined when every limit
 * has room.
 */
export function refusingLimit(
  limits: readonly LimitVerdict[],
  count = limits.length,
): LimitState | undefined {
  let by: LimitVerdict | undefined;
  for (let i = 0; i < count; i++) {
    const v = limits[i]!;
    if (!v.fits && (by === undefined || v.retryMs > by.retryMs)) by = v;
  }
  return by && { scope: by.scope, rule: by.rule, remaining: Math.max(0, by.room), resetMs: by.retryMs };
}

/** The first of the first `count` balances (the key's before its consumer's) that does not hold the request's cost. */
export function shortBalance(
  balances: readonly BalanceVerdict[],
  count = balances.length,
): BalanceState | undefined {
  for (let i = 0; i < count; i++) if (!balances[i]!.fits) return balances[i]!.before;
  return undefined;
}

/**
 * The request refused, when a balance or a limit refuses it (a balance rather than a limit when both
 * fall short: the limit's window would pass, the balance would still be short); else undefined. Its
 * states are every limit's as it stands.
 */
export function refusalOf(
  limits: readonly LimitVerdict[],
  balances: readonly BalanceVerdict[],
  limitCount = limits.length,
  balanceCount = balances.length,
): Decision | undefined {
  const balance = shortBalance(balances, balanceCount);
  const limit = balance === undefined ? refusingLimit(limits, limitCount) : undefined;
  if (balance === undefined && limit === undefined) return undefined;
  const states: LimitState[] = [];
  for (let i = 0; i < limitCount; i++) states.push(standing(limits[i]!));
  return { allowed: false, limit, balance, states };
}

/** A limit's state as its verdict found it (not charged). */
export const standing = (v: LimitVerdict): LimitState => ({
  scope: v.scope,
  rule: v.rule,
  remaining: v.remaining,
  resetMs: v.resetMs,
});

/**
 * The request admitted, given every limit's state and every balance's once charged: the limit with the
 * fewest units left (of those, the one whose window ends last) and the balance with the fewest left
 * (the first of equals) are reported; `release` gives back its concurrency places, when it took any.
 */
export function admissionOf(
  states: readonly LimitState[],
  balances: readonly BalanceState[],
  release?: () => void,
): Decision {
  const limit = states.length === 0 ? undefined : tightest(states);
  const balance = lowestOf(balances);
  return release === undefined
    ? { allowed: true, limit, balance, states }
    : { allowed: true, limit, balance, states, release };
}

/** The balance an admitted request reports: the fewest units left, the first of equals. */
export function lowestOf(balances: readonly BalanceState[]): BalanceState | undefined {
  let lowest: BalanceState | undefined;
  for (const b of balances) if (lowest === undefined || b.remaining < lowest.remaining) lowest = b;
  return lowest;
}
