/**
 * Settling a request whose cost its response reports (a cost entry's `settle`,
 * docs/guides/usage-priced-apis.md): the meter reads the units beside the response, and when it ends
 * the limiter charges the difference from the reservation; a response that reports nothing readable
 * keeps its reservation as its cost.
 */
import type { Reservation } from '../limits/rate-limiter.js';
import { METER_BOUNDS_DEFAULT } from '../metering/meter-bounds.js';
import { openMeter } from '../metering/open-meter.js';
import type { Reading } from '../metering/reading.js';
import type { HeaderBag, UnitMeter } from '../metering/unit-meter.js';
import type { CostRule } from '../plans/plan.js';
import type { SettleRule } from '../plans/usage-pricing.js';
import { compileReservation, reservedUnits } from '../metering/reservation.js';

/** What an admitted request's response is read for, and what it reserved. */
export interface PendingSettlement {
  /** How its response reports its units; undefined: a later call reports them (verify's `reserve`). */
  readonly rule: SettleRule | undefined;
  readonly settleMax: number;
  /** The units reserved: the request's cost until it is settled. */
  readonly reserved: number;
  /** What the limiter charged, to settle; undefined: no limit or balance applies (usage alone counts it). */
  readonly reservation: Reservation | undefined;
}

/**
 * What a request matching `rule` reserves (its cost, when it does not settle): `units` when its caller
 * names them (verify's `reserve`), else `cost`, or `reserve` read from its parsed body; capped at
 * `settleMax`, and at least 1, as the limiter charges whole requests.
 */
export function reservedCost(
  rule: CostRule | undefined,
  body: unknown,
  settleMax: number,
  units?: number,
): number {
  if (units !== undefined) return Math.max(1, Math.min(units, settleMax));
  const reserve = rule?.reserve;
  if (reserve === undefined) return Math.min(rule?.cost ?? 1, settleMax);
  return Math.max(1, reservedUnits(body, compileReservation(reserve)!, settleMax));
}

/** The meter of a response, from its headers as undici gives them (raw name and value pairs). */
export function meterOf(pending: PendingSettlement, raw: readonly Buffer[]): UnitMeter | undefined {
  if (pending.rule === undefined) return undefined;
  return openMeter(pending.rule, headerBagOf(raw), { ...METER_BOUNDS_DEFAULT, settleMax: pending.settleMax });
}

/** Raw header (or trailer) pairs as a bag, names in lower case, a repeated name as a list. */
export function headerBagOf(raw: readonly (Buffer | string)[]): HeaderBag {
  const bag: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = String(raw[i]).toLowerCase();
    const value = String(raw[i + 1]);
    const held = bag[name];
    bag[name] = held === undefined ? value : Array.isArray(held) ? [...held, value] : [held, value];
  }
  return bag;
}

/** The request's cost: the units its response reported, else its reservation. */
export const settledCost = (pending: PendingSettlement, reading: Reading): number =>
  reading.settled ? reading.units : pending.reserved;
