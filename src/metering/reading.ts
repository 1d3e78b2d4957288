/** What a meter read from a response: the units it reported, or why it reported none Tollgate can use. */
export type Reading = { settled: true; units: number } | { settled: false; reason: UnsettledReason };

/**
 * - `cut-short`: the response did not end (the client left, the backend failed or timed out);
 * - `malformed`: the body, an event or the header is not what the rule reads (not JSON, not an integer);
 * - `not-reported`: well formed, but the header or a pointer's integer is missing;
 * - `too-large`: past the meter's byte bound, so it stopped reading.
 * All keep the reservation as the request's cost.
 */
export type UnsettledReason = 'cut-short' | 'malformed' | 'not-reported' | 'too-large';

export { SETTLE_MAX_DEFAULT } from '../plans/usage-pricing.js';

export const settled = (units: number, settleMax: number): Reading => ({
  settled: true,
  units: Math.min(units, settleMax),
});

export const unsettled = (reason: UnsettledReason): Reading => ({ settled: false, reason });
