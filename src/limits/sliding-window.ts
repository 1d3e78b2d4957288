import type { Period } from '../plans/window.js';

/**
 * Sliding windows, counted in slots (docs/decisions/0018-plans-with-several-limits.md). A period is
 * cut into SLOTS equal slots aligned to the epoch; a request in slot k is admitted only while the slots
 * k − SLOTS … k together hold fewer than `limit`. Those slots cover every span of one period that
 * ends in slot k, so no span of one period ever holds more than `limit` admitted requests; the price is
 * that a request can be refused for requests up to one period plus one slot old.
 *
 * Pure functions: every caller passes the clock in.
 */
export const SLOTS = 20;

const DAY_MS = 86_400_000;
/** Months and years vary; a sliding month is 30 days and a sliding year 365. */
const PERIOD_MS: Record<Period, number> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: DAY_MS,
  week: 7 * DAY_MS,
  month: 30 * DAY_MS,
  year: 365 * DAY_MS,
};

/** The length of a sliding `period`, ms. */
export function slidingPeriodMs(period: Period): number {
  return PERIOD_MS[period];
}

/** The length of one slot of `period`, ms (a whole number for every period). */
export function slotMs(period: Period): number {
  return PERIOD_MS[period] / SLOTS;
}

/** The slot of `period` that holds `nowMs`. */
export function slotAt(period: Period, nowMs: number): number {
  return Math.floor(nowMs / slotMs(period));
}

/** The oldest slot still counted at `slot`. */
export function oldestCounted(slot: number): number {
  return slot - SLOTS;
}

/** When the requests of `slot` stop counting, epoch ms (what the counts expire by). */
export function slotLeavesAt(period: Period, slot: number): number {
  return (slot + SLOTS + 1) * slotMs(period);
}

/**
 * A sliding limit's LimitState.resetMs once the requests of `slot` are its oldest: when they stop
 * counting, rounded up to the whole second. `resetTime` is written in whole seconds and `Retry-After`
 * counts whole seconds to it, so an instant between seconds would be cut to one before a retry can
 * succeed (only a second's 50 ms slots end between seconds).
 */
export function slidingResetAt(period: Period, slot: number): number {
  return Math.ceil(slotLeavesAt(period, slot) / 1_000) * 1_000;
}

/**
 * A sliding limit's count at `slot` from its slots as stored (slot → places): the places of the slots
 * still counted, and the oldest of those slots that holds any (`slot` itself when none does).
 */
export function slidingCount(
  stored: Readonly<Record<string, string>>,
  slot: number,
): { readonly used: number; readonly oldest: number } {
  let used = 0;
  let oldest = slot;
  for (const [field, places] of Object.entries(stored)) {
    const s = Number(field);
    const n = Number(places);
    if (s < oldestCounted(slot) || n <= 0) continue;
    used += n;
    if (s < oldest) oldest = s;
  }
  return { used, oldest };
}
