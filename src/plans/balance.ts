/**
 * Prepaid credits (docs/guides/credits.md): a balance held by a key or a consumer, which every admitted
 * request it applies to spends its cost from, and which a refill sets back to its amount each day or
 * month. Pure: the store keeps balances, the limiters count what is spent, and both read this.
 *
 * A balance is counted in (epoch, window) periods. A `set` starts a new epoch (a new count from zero
 * against the value set); a refill starts a new window (a new count against the refill amount); a top-up
 * raises what the current period grants. So what a store holds of a balance is `{epoch, window, granted,
 * spent, base}`, and the database's record of it (`Balance`) can bring any store up to date without
 * knowing what it holds: `settle` below, and its twin in the consume script, do that.
 */

export const REFILL_INTERVALS = ['day', 'month'] as const;
export type RefillInterval = (typeof REFILL_INTERVALS)[number];

export interface Refill {
  /** What `remaining` is set to at each refill; it does not add up. */
  readonly amount: number;
  readonly interval: RefillInterval;
  /** Monthly: the day of the month, 1-31 (the month's last day when it is shorter). */
  readonly dayOfMonth: number;
  /**
   * Epoch ms this refill was put on a balance it did not start (`balanceRescheduled`): a refill
   * window that began before it, or at that instant, is no refill due. Absent: the refill came with
   * the balance's count.
   */
  readonly since?: number;
}

/** A balance as the database records it: what a key or consumer holds, as the key cache passes it on. */
export interface Balance {
  /** Bumped by every `set`. */
  readonly epoch: number;
  /** The start of the refill window `granted` belongs to, epoch ms; 0 without a refill. */
  readonly window: number;
  /** Units granted in that window of that epoch: the value set or refilled, plus the top-ups since. */
  readonly granted: number;
  /** Units known spent in that window of that epoch when it was last saved: where a lost count resumes. */
  readonly floor: number;
  readonly refill: Refill | null;
  /** `credits.low` below this many units; null: below a tenth of the refill amount, if any. */
  readonly lowAt: number | null;
}

/** What a store holds of a balance. */
export interface HeldBalance {
  epoch: number;
  window: number;
  granted: number;
  spent: number;
  /**
   * What `spent` was (re)started from: the floor it was taken with, raised by the replicas that put
   * back what they had seen spent after Redis lost it (limits/recovery/balance-ledger.ts).
   */
  base: number;
}

const DAY_MS = 86_400_000;

/** The start of the refill window that holds `nowMs`: today 00:00 UTC, or the latest refill day of the month. */
export function refillWindowAt(refill: Refill, nowMs: number): number {
  if (refill.interval === 'day') return Math.floor(nowMs / DAY_MS) * DAY_MS;
  const now = new Date(nowMs);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const thisMonth = refillDayOf(year, month, refill.dayOfMonth);
  return thisMonth <= nowMs ? thisMonth : refillDayOf(year, month - 1, refill.dayOfMonth);
}

/** The next refill after `nowMs`, epoch ms: the `resetTime` of a balance that ran out. */
export function nextRefillAt(refill: Refill, nowMs: number): number {
  if (refill.interval === 'day') return refillWindowAt(refill, nowMs) + DAY_MS;
  const start = new Date(refillWindowAt(refill, nowMs));
  return refillDayOf(start.getUTCFullYear(), start.getUTCMonth() + 1, refill.dayOfMonth);
}

/** 00:00 UTC of `day` of a month (`month` may run over a year's end), or of its last day when shorter. */
function refillDayOf(year: number, month: number, day: number): number {
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(day, lastDay));
}

/**
 * The window a balance's count is in at `nowMs`: its refill window, else 0. A refill changed on a
 * counting balance keeps the count's window until its first boundary after the change: one that
 * begins at the very instant of the change is not after it.
 */
export function windowOf(balance: Balance, nowMs: number): number {
  const refill = balance.refill;
  if (refill === null) return 0;
  const window = refillWindowAt(refill, nowMs);
  return refill.since !== undefined && window <= refill.since ? balance.window : window;
}

/**
 * Brings what a store holds of a balance (undefined: nothing, or lost) up to the database's record
 * and to the refill window of `nowMs`: a newer epoch replaces it, a later window of the same epoch too,
 * a top-up the store has not seen raises `granted`, and a refill due starts the window afresh. A record
 * older than what is held changes nothing: another replica has seen newer. The consume script does the
 * same, step for step.
 */
export function settle(held: HeldBalance | undefined, balance: Balance, nowMs: number): HeldBalance {
  let h = held;
  if (h === undefined || balance.epoch > h.epoch) {
    h = startOf(balance);
  } else if (balance.epoch === h.epoch && balance.window > h.window) {
    h = startOf(balance);
  } else if (balance.epoch === h.epoch && balance.window === h.window && balance.granted > h.granted) {
    h.granted = balance.granted;
  }
  const window = windowOf(balance, nowMs);
  if (balance.refill !== null && window > h.window) {
    h.window = window;
    h.granted = balance.refill.amount;
    h.spent = 0;
    h.base = 0;
  }
  return h;
}

const startOf = (b: Balance): HeldBalance => ({
  epoch: b.epoch,
  window: b.window,
  granted: b.granted,
  spent: b.floor,
  base: b.floor,
});

/** Units a held balance still allows: 0 at the least, as a decision reports it. */
export const remainingOf = (h: HeldBalance): number => Math.max(0, h.granted - h.spent);

/**
 * Units a held balance holds, as the key and consumer details show it: below 0 once requests settled
 * after their response used more than they reserved (docs/guides/usage-priced-apis.md).
 */
export const holdingOf = (h: HeldBalance): number => h.granted - h.spent;

/** Where `credits.low` is: the balance's own `lowAt`, else a tenth of its refill amount; null: never. */
export function lowThresholdOf(balance: Balance): number | null {
  if (balance.lowAt !== null) return balance.lowAt;
  return balance.refill === null ? null : Math.ceil(balance.refill.amount / 10);
}

/** A balance set to `remaining` at `nowMs` (created, PATCHed, or `set`): a new epoch, counted from zero. */
export function balanceSet(
  previousEpoch: number,
  remaining: number,
  refill: Refill | null,
  lowAt: number | null,
  nowMs: number,
): Balance {
  const window = refill === null ? 0 : refillWindowAt(refill, nowMs);
  return { epoch: previousEpoch + 1, window, granted: remaining, floor: 0, refill, lowAt };
}

/**
 * `balance` with a new refill and `lowAt` from `nowMs`, its count going on (after a refill due under
 * the old one): the same epoch, so every replica keeps counting what was spent, before and while it
 * changes, instead of starting a new count. The new refill's first is at its next boundary.
 */
export function balanceRescheduled(
  balance: Balance,
  refill: Omit<Refill, 'since'> | null,
  lowAt: number | null,
  nowMs: number,
): Balance {
  return { ...withDueRefill(balance, nowMs), refill: refill && { ...refill, since: nowMs }, lowAt };
}

/**
 * `balance` topped up by `add` at `nowMs`: the units granted in the current window rise by `add` (a
 * refill due first sets them to the refill amount). A holder without a balance gets one, with no refill.
 */
export function balanceToppedUp(balance: Balance | null, epoch: number, add: number, nowMs: number): Balance {
  if (balance === null) return balanceSet(epoch, add, null, null, nowMs);
  const current = withDueRefill(balance, nowMs);
  return { ...current, granted: current.granted + add };
}

/** The record at `nowMs`: a refill due starts its window, granting the refill amount, nothing spent. */
function withDueRefill(balance: Balance, nowMs: number): Balance {
  const window = windowOf(balance, nowMs);
  return window > balance.window
    ? { ...balance, window, granted: balance.refill!.amount, floor: 0 }
    : balance;
}
