/**
 * Settling a request whose cost its response reports (a cost entry's `settle`,
 * docs/guides/usage-priced-apis.md): the meter reads the units beside the response, and when it ends
 * the limiter charges the difference from the reservation; a response that reports nothing readable
 * keeps its reservation as its cost.
 */
import type { Reservation } from '../limits/rate-limiter.js';
import { METER_BOUNDS_DEFAULT } from '../metering/meter-bounds.js';
import { decodedMeter } from '../metering/decoding-meter.js';
import { BODY_RULE_HEADERS, headersRead, openMeter } from '../metering/open-meter.js';
import type { Reading } from '../metering/reading.js';
import type { HeaderBag, UnitMeter } from '../metering/unit-meter.js';
import type { CostRule } from '../plans/plan.js';
import type { SettleRule } from '../plans/usage-pricing.js';
import { compileReservation, reservedUnits } from '../metering/reservation.js';
import { ownField, setOwnField } from '../net/own-field.js';

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

/**
 * The meter of a response, from the header fields passed on to its client (name and value pairs, as
 * `responseHeaders` makes them: a field Tollgate drops, hop-by-hop or its own, is not read); a body in
 * a content coding is read decoded (src/metering/decoding-meter.ts).
 */
export function meterOf(pending: PendingSettlement, fields: readonly string[]): UnitMeter | undefined {
  const rule = pending.rule;
  if (rule === undefined) return undefined;
  const bounds = { ...METER_BOUNDS_DEFAULT, settleMax: pending.settleMax };
  // A header rule reads a header, whatever coding the body is in.
  if ('header' in rule) return openMeter(rule, headerBagOf(fields, headersRead(rule)), bounds);
  const headers = headerBagOf(fields, BODY_HEADERS);
  const meter = openMeter(rule, headers, bounds);
  return meter && decodedMeter(meter, headers[CONTENT_ENCODING]);
}

const CONTENT_ENCODING = 'content-encoding';
/** What a body rule's meter reads, and the coding the body is in: the same for every response. */
const BODY_HEADERS = [...BODY_RULE_HEADERS, CONTENT_ENCODING];

/**
 * Header (or trailer) pairs as a bag, names in lower case, a repeated name as a list; given `names`
 * (in lower case), only those: the values of the rest are never decoded.
 */
export function headerBagOf(raw: readonly (Buffer | string)[], names?: readonly string[]): HeaderBag {
  const bag: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = names === undefined ? String(raw[i]).toLowerCase() : nameAmong(String(raw[i]), names);
    if (name === undefined) continue;
    const value = String(raw[i + 1]);
    const held = ownField(bag, name);
    setOwnField(
      bag,
      name,
      held === undefined ? value : Array.isArray(held) ? [...held, value] : [held, value],
    );
  }
  return bag;
}

/** Which of `names` a header name is, ignoring case (names are ASCII tokens), if any. */
function nameAmong(raw: string, names: readonly string[]): string | undefined {
  for (const name of names) if (raw.length === name.length && raw.toLowerCase() === name) return name;
  return undefined;
}

/** The request's cost: the units its response reported, else its reservation. */
export const settledCost = (pending: PendingSettlement, reading: Reading): number =>
  reading.settled ? reading.units : pending.reserved;
