import type { ReserveRule } from '../plans/usage-pricing.js';
import { parsePointer, resolvePointer, type JsonPointer } from '../plans/json-pointer.js';

/** A `ReserveRule` with its pointer parsed once, when the plan is read. */
export interface Reservation {
  pointer: JsonPointer;
  add: number;
  fallback: number;
}

export function compileReservation(rule: ReserveRule): Reservation | undefined {
  const pointer = parsePointer(rule.pointer);
  return pointer && { pointer, add: rule.add ?? 0, fallback: rule.default };
}

/**
 * The units to reserve for a request whose JSON body is `body` (undefined when it has none or it is
 * not JSON): e.g. `max_tokens` plus a bound on the prompt. Only a non-negative integer counts; the
 * result is capped at `settleMax`.
 */
export function reservedUnits(body: unknown, reservation: Reservation, settleMax: number): number {
  const value = resolvePointer(body, reservation.pointer);
  const units = isCount(value) ? value + reservation.add : reservation.fallback;
  return Math.min(units, settleMax);
}

/**
 * A non-negative integer. One past the safe integers is still one, beyond every cap: `JSON.parse`
 * reads it as the nearest double, or as `Infinity` when it has more digits than a double holds.
 */
const isCount = (value: unknown): value is number =>
  typeof value === 'number' && value >= 0 && (Number.isInteger(value) || value === Infinity);
