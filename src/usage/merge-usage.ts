/** Adding one key's usage into another's, its names capped as the recorder and the store cap them, or all kept. */
import { mergeFailureLog } from './failure-log.js';
import {
  MAX_CUSTOMERS_PER_KEY,
  MAX_ENDPOINTS_PER_KEY,
  addCounts,
  countedName,
  emptyBucket,
  emptyCounts,
  emptyDay,
  emptyEndpoint,
  emptyFiledUsage,
  entryFor,
  entryOf,
  failuresOf,
  type FiledUsage,
  type KeyUsage,
} from './usage.js';

/**
 * Adds `from` into `into`. `capped`: distinct endpoints and customers are capped as the recorder and
 * the store cap them, a day's names folding as the totals' do (the detail view). Not capped: every
 * name is kept, for usage on its way to the store, which applies the caps itself.
 */
export function mergeFiledUsage(into: FiledUsage, from: FiledUsage, capped = true): void {
  const endpointCap = capped ? MAX_ENDPOINTS_PER_KEY : Infinity;
  const customerCap = capped ? MAX_CUSTOMERS_PER_KEY : Infinity;
  for (const [endpoint, u] of from.endpoints)
    addCounts(entryFor(into.endpoints, endpoint, endpointCap, emptyEndpoint), u);
  for (const [customer, u] of from.customers)
    addCounts(entryFor(into.customers, customer, customerCap, emptyCounts), u);
  mergeDated(into, from, into);
}

/** `mergeFiledUsage`, and each consumer's part under the names the whole counts it by. */
export function mergeKeyUsage(into: KeyUsage, from: KeyUsage, capped = true): void {
  mergeFiledUsage(into, from, capped);
  if (from.failures !== undefined) mergeFailureLog(failuresOf(into), from.failures);
  for (const [consumerId, part] of from.consumers) {
    const target = entryOf(into.consumers, consumerId, emptyFiledUsage);
    for (const [endpoint, u] of part.endpoints)
      addCounts(entryOf(target.endpoints, countedName(into.endpoints, endpoint, 0), emptyEndpoint), u);
    for (const [customer, u] of part.customers)
      addCounts(entryOf(target.customers, countedName(into.customers, customer, 0), emptyCounts), u);
    mergeDated(target, part, into);
  }
}

/**
 * The minutes and days of `from` into `into`. Every path and customer of a day is in the totals of
 * `names`, merged before: a name they fold into "(other)" folds here too. Routes have no totals: the
 * recorder caps them per day, and the store per day and month.
 */
function mergeDated(into: FiledUsage, from: FiledUsage, names: FiledUsage): void {
  for (const [minute, u] of from.minutes) addCounts(entryOf(into.minutes, minute, emptyBucket), u);
  for (const [day, d] of from.days) {
    const target = entryOf(into.days, day, emptyDay);
    for (const [endpoint, u] of d.endpoints)
      addCounts(entryOf(target.endpoints, countedName(names.endpoints, endpoint, 0), emptyBucket), u);
    for (const [customer, u] of d.customers)
      addCounts(entryOf(target.customers, countedName(names.customers, customer, 0), emptyBucket), u);
    for (const [route, u] of d.routes) addCounts(entryOf(target.routes, route, emptyBucket), u);
  }
}
