/**
 * What a plan says about requests priced by what they used (docs/guides/usage-priced-apis.md): how a
 * cost entry reserves units before forwarding and reads the units the backend reports after, the
 * plan's unit, and a match on the request's JSON body. Data only: `src/metering/` reads them.
 */

/** How a cost entry reads the units from a response: a header, JSON pointers, or a preset. */
export type SettleRule =
  { header: string } | { json: readonly string[] } | { preset: (typeof SETTLE_PRESETS)[number] };

export const SETTLE_PRESETS = ['openai', 'anthropic'] as const;

/** A cost entry's `reserve`: the integer at `pointer` of the request's JSON body plus `add`, else `default`. */
export interface ReserveRule {
  readonly pointer: string;
  readonly add?: number;
  readonly default: number;
}

/** A limit's or cost's `match.body`: the request's JSON body holds one of `values` at `pointer`. */
export interface BodyMatchRule {
  readonly pointer: string;
  readonly values: readonly string[];
}

/** The most units one request may reserve or settle, unless its cost entry says `settleMax`. */
export const SETTLE_MAX_DEFAULT = 10_000_000;
/** The highest `settleMax`, `reserve.add` and `reserve.default` a plan may set: sums stay exact integers. */
export const MAX_SETTLE_UNITS = 1_000_000_000;

/** What a plan's limits and balances count when it does not say. */
export const PLAN_UNIT_DEFAULT = 'requests';
export const MAX_UNIT_LENGTH = 32;

/** A `json` settle rule sums 1 to this many pointers. */
export const MAX_SETTLE_POINTERS = 4;
/** A body match lists 1 to this many values. */
export const MAX_BODY_MATCH_VALUES = 100;
