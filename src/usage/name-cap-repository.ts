/** Where the store caps a key's names, and the name each name of a batch is counted under there. */
import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import {
  MAX_CUSTOMERS_PER_KEY,
  MAX_ENDPOINTS_PER_KEY,
  MAX_ROUTES_PER_KEY,
  OTHER_ENDPOINT,
  addCounts,
  entryOf,
  type UsageCounts,
} from './usage.js';

/**
 * Values in one `in (…)` list: a batch may hold any number of keys, and a key any number of new
 * names (a Redis hash grows through a Postgres outage), while a statement takes at most 65,535
 * parameters in Postgres and 32,766 in SQLite.
 */
const IDS_PER_QUERY = 1000;

/**
 * Where names are capped: a key's totals over its life (the detail), and each day and month of its
 * series (usage over time), so a new month starts with room for the customers it brings.
 */
export const NAMES = {
  endpoints: { table: 'usage_endpoints', column: 'endpoint', max: MAX_ENDPOINTS_PER_KEY },
  customers: { table: 'usage_customers', column: 'customer_id', max: MAX_CUSTOMERS_PER_KEY },
  endpointSeries: { table: 'usage_endpoint_buckets', column: 'endpoint', max: MAX_ENDPOINTS_PER_KEY },
  customerSeries: { table: 'usage_customer_buckets', column: 'customer_id', max: MAX_CUSTOMERS_PER_KEY },
  routeSeries: { table: 'usage_route_buckets', column: 'route_id', max: MAX_ROUTES_PER_KEY },
} as const;
type Names = (typeof NAMES)[keyof typeof NAMES];

/** The names one cap counts: a key's totals, or one period of its series. */
interface CapScope {
  readonly keyId: string;
  readonly period?: { readonly granularity: 'day' | 'month'; readonly start: number };
}
const scopeId = (keyId: string, period?: CapScope['period']) =>
  period ? `${keyId}|${period.granularity}|${period.start}` : keyId;

/** `values` in slices short enough for one statement's parameters. */
function* slices<T>(values: readonly T[]): Generator<T[]> {
  for (let i = 0; i < values.length; i += IDS_PER_QUERY) yield values.slice(i, i + IDS_PER_QUERY);
}

/** Each batch name → the name it is counted under ("(other)" beyond a cap); undefined: every name its own. */
export type Naming = Map<string, string> | undefined;

/** `entries` under the names `naming` gives them, those folded into one name added up. */
export function renamed<T extends UsageCounts>(
  entries: Map<string, T>,
  naming: Naming,
  create: () => T,
): Map<string, T> {
  if (naming === undefined) return entries;
  const folded = new Map<string, T>();
  for (const [name, u] of entries) addCounts(entryOf(folded, naming.get(name) ?? OTHER_ENDPOINT, create), u);
  return folded;
}

/**
 * Distinct names (other than "(other)") each key already holds in `names`, under any consumer, by
 * scope id: for the totals per key, for the series per key and period starting at one of `starts`.
 */
export async function heldCounts(
  trx: Db,
  names: Names,
  keyIds: readonly string[],
  starts?: readonly number[],
): Promise<Map<string, number>> {
  const held = new Map<string, number>();
  if (starts?.length === 0) return held;
  for (const ids of slices(keyIds)) {
    const rows = await trx
      .selectFrom(names.table)
      .select(['key_id', sql<number>`cast(count(distinct ${sql.ref(names.column)}) as integer)`.as('n')])
      .$if(starts !== undefined, (q) =>
        q.select([sql<'day' | 'month'>`granularity`.as('granularity'), sql<Date>`start`.as('start')]),
      )
      .where('key_id', 'in', ids)
      .where(sql.ref(names.column), '<>', OTHER_ENDPOINT)
      .$if(starts !== undefined, (q) =>
        q
          .where(
            sql.ref('start'),
            'in',
            starts!.map((s) => new Date(s)),
          )
          .groupBy([sql.ref('granularity'), sql.ref('start')]),
      )
      .groupBy('key_id')
      .execute();
    for (const r of rows)
      held.set(
        scopeId(r.key_id, r.start ? { granularity: r.granularity!, start: r.start.getTime() } : undefined),
        Number(r.n),
      );
  }
  return held;
}

/**
 * The name each of a batch's names (paths, customers) is counted under: its own, or "(other)"
 * beyond the cap, counting the names the scope already holds; only scopes near the cap cost a
 * query, for which of the batch's names are stored already.
 */
export async function naming(
  trx: Db,
  names: Names,
  scope: CapScope,
  batchNames: readonly string[],
  heldCounts: ReadonlyMap<string, number>,
): Promise<Naming> {
  const held = heldCounts.get(scopeId(scope.keyId, scope.period)) ?? 0;
  const distinct = [...new Set(batchNames)];
  if (held + distinct.length <= names.max) return undefined;
  const stored = new Set<string>();
  for (const slice of slices(distinct)) {
    const existing = await trx
      .selectFrom(names.table)
      .select(sql<string>`${sql.ref(names.column)}`.as('name'))
      .where('key_id', '=', scope.keyId)
      .$if(scope.period !== undefined, (q) =>
        q
          .where(sql.ref('granularity'), '=', scope.period!.granularity)
          .where(sql.ref('start'), '=', new Date(scope.period!.start)),
      )
      .where(sql.ref(names.column), 'in', slice)
      .execute();
    for (const row of existing) stored.add(row.name);
  }
  const naming = new Map<string, string>();
  let count = held;
  for (const name of distinct) {
    const kept = stored.has(name) || name === OTHER_ENDPOINT || count < names.max;
    if (kept && !stored.has(name) && name !== OTHER_ENDPOINT) count++;
    naming.set(name, kept ? name : OTHER_ENDPOINT);
  }
  return naming;
}
