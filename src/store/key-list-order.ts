/**
 * The orders of the key list and where a page of each continues (keyset pagination: a page costs what
 * the first does, however deep). Each order ends on the key id, so no two keys tie. The values a key
 * is sorted by only grow while an administrator pages (a use, traffic in a window fixed by the first
 * page), so in a descending order no key is listed twice: one that moves up past the page boundary
 * meanwhile is on the first page again instead (docs/decisions/0055-key-list-search-and-sort.md).
 */
import { sql, type RawBuilder } from 'kysely';

export const KEY_SORT_FIELDS = ['createdAt', 'lastUsedAt', 'requests24h'] as const;
export type KeySortField = (typeof KEY_SORT_FIELDS)[number];

export interface KeyOrder {
  readonly field: KeySortField;
  readonly descending: boolean;
  /** requests24h: the hour buckets counted start here (a cursor keeps it, so every page ranks alike). */
  readonly since?: Date;
}

/** Where a page continues: after the key with this sort value and id. */
export interface KeyPosition {
  /** Epoch ms (createdAt, lastUsedAt; null: never used) or a count of requests (requests24h). */
  readonly value: number | null;
  readonly id: string;
}

/** The value a key is sorted by, as SQL over `api_keys`. */
export function sortValue(order: KeyOrder): RawBuilder<Date | number | null> {
  switch (order.field) {
    case 'createdAt':
      return sql<Date>`api_keys.created_at`;
    case 'lastUsedAt':
      return sql<Date | null>`api_keys.last_used_at`;
    case 'requests24h':
      // Every consumer's rows of the key's hour buckets (the primary key's prefix: an index range).
      return sql<number>`(select coalesce(sum(b.requests), 0) from usage_buckets b
        where b.key_id = api_keys.id and b.granularity = 'hour' and b.start >= ${order.since ?? new Date(0)})`;
  }
}

/** A position's value as the SQL of its field compares it. */
const bound = (order: KeyOrder, value: number): Date | number =>
  order.field === 'requests24h' ? value : new Date(value);

/**
 * The keys after `after` in `order`. Never-used keys sort before every use (ascending) and after it
 * (descending): an administrator looking for stale keys finds them first, one looking for busy keys last.
 */
export function afterPosition(order: KeyOrder, after: KeyPosition): RawBuilder<boolean> {
  const value = sortValue(order);
  const id = sql.ref('api_keys.id');
  const beyond = sql.raw(order.descending ? '<' : '>');
  if (after.value === null)
    return order.descending
      ? sql<boolean>`(${value} is null and ${id} ${beyond} ${after.id})`
      : sql<boolean>`(${value} is not null or ${id} ${beyond} ${after.id})`;
  const rowAfter = sql<boolean>`(${value}, ${id}) ${beyond} (${bound(order, after.value)}, ${after.id})`;
  return order.field === 'lastUsedAt' && order.descending
    ? sql<boolean>`(${rowAfter} or ${value} is null)`
    : rowAfter;
}

/** The ORDER BY of `order`, the id last. */
export function orderBy(order: KeyOrder): RawBuilder<unknown> {
  const direction = sql.raw(order.descending ? 'desc' : 'asc');
  const nulls = sql.raw(order.field !== 'lastUsedAt' ? '' : order.descending ? 'nulls last' : 'nulls first');
  return sql`${sortValue(order)} ${direction} ${nulls}, api_keys.id ${direction}`;
}
