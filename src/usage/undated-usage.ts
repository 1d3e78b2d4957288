/** What a key's totals hold beyond its dated part: usage recorded without its day. */
import {
  addCounts,
  emptyBucket,
  emptyDay,
  entryOf,
  type BucketCounts,
  type Counted,
  type DayUsage,
  type FiledUsage,
} from './usage.js';

/**
 * Totals `a` less their dated part `b`, or undefined when nothing is left (never below zero): what
 * the totals know of it (no status classes, outcomes or response times, which only buckets carry).
 */
export function remainder(a: Counted, b: BucketCounts | undefined): BucketCounts | undefined {
  const requests = a.requests - (b?.requests ?? 0);
  if (requests <= 0) return undefined;
  const unsettled = (a.unsettled ?? 0) - (b?.unsettled ?? 0);
  return {
    ...emptyBucket(),
    requests,
    successful: Math.max(0, a.successful - (b?.successful ?? 0)),
    failed: Math.max(0, a.failed - (b?.failed ?? 0)),
    totalDurationMs: Math.max(0, (a.totalDurationMs ?? 0) - (b?.totalDurationMs ?? 0)),
    cost: Math.max(0, (a.cost ?? 0) - (b?.cost ?? 0)),
    ...(unsettled > 0 && { unsettled }),
  };
}

/** A key's totals by name that `days` does not account for: usage recorded without its day. */
export function undatedUsage(usage: FiledUsage): DayUsage {
  const dated = emptyDay();
  for (const d of usage.days.values()) {
    for (const [endpoint, u] of d.endpoints) addCounts(entryOf(dated.endpoints, endpoint, emptyBucket), u);
    for (const [customer, u] of d.customers) addCounts(entryOf(dated.customers, customer, emptyBucket), u);
  }
  const undated = emptyDay();
  for (const [endpoint, u] of usage.endpoints) {
    const rest = remainder(u, dated.endpoints.get(endpoint));
    if (rest) undated.endpoints.set(endpoint, rest);
  }
  for (const [customer, u] of usage.customers) {
    const rest = remainder(u, dated.customers.get(customer));
    if (rest) undated.customers.set(customer, rest);
  }
  return undated;
}
