import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { deleteInSlices } from './history-repository.js';
import {
  leftOutKey,
  MAX_FAILURES_PER_KEY_MINUTE,
  parseLeftOutKey,
  type FailedLimit,
  type FailureEntry,
} from './failure-log.js';
import type { UsageBatch } from './usage.js';

const CHUNK = 500;

/** Whose failures: a key's, a consumer's, or the fleet's (neither). */
export type FailureScope = { readonly keyId: string } | { readonly consumerId: string } | object;

export interface FailureQuery {
  readonly scope: FailureScope;
  /** Epoch ms, inclusive. */
  readonly fromMs: number;
  /** Epoch ms, exclusive. */
  readonly toMs: number;
  readonly code?: string;
  readonly requestId?: string;
  readonly limit: number;
  /** Continue after this entry (its time and sequence number), newest first. */
  readonly after?: { readonly at: number; readonly id: string };
}

/** A stored entry: the entry, its key and its place in the log. */
export interface StoredFailure extends FailureEntry {
  readonly seq: string;
  readonly keyId: string;
}

/** The name of a key's minute among a batch's. */
const minuteOfKey = (keyId: string, minuteMs: number) => `${minuteMs}|${keyId}`;

/** A key's entries of one minute that a batch brings, oldest first. */
interface MinuteOfKey {
  readonly keyId: string;
  readonly minuteMs: number;
  readonly entries: FailureEntry[];
}

/** The batch's entries by key and minute, in the order their counts are locked (the same in every batch). */
function minutesOfKeys(batch: UsageBatch): MinuteOfKey[] {
  const groups = new Map<string, MinuteOfKey>();
  for (const [keyId, usage] of batch)
    for (const entry of usage.failures?.entries ?? []) {
      const minuteMs = entry.atMs - (entry.atMs % 60_000);
      const name = minuteOfKey(keyId, minuteMs);
      let group = groups.get(name);
      if (!group) groups.set(name, (group = { keyId, minuteMs, entries: [] }));
      group.entries.push(entry);
    }
  for (const group of groups.values()) group.entries.sort((a, b) => a.atMs - b.atMs);
  return [...groups.values()].sort((a, b) =>
    a.keyId === b.keyId ? a.minuteMs - b.minuteMs : a.keyId < b.keyId ? -1 : 1,
  );
}

/**
 * How many entries each key's minute had been offered before this batch, across every replica's
 * batches: the upsert adds this batch's and holds the row until the transaction ends, so a batch
 * applied at the same time by another replica counts after this one.
 */
async function offeredBefore(trx: Db, groups: readonly MinuteOfKey[]): Promise<Map<string, number>> {
  const before = new Map<string, number>();
  for (let i = 0; i < groups.length; i += CHUNK) {
    const slice = groups.slice(i, i + CHUNK);
    const rows = await trx
      .insertInto('failure_offered')
      .values(slice.map((g) => ({ key_id: g.keyId, minute_ms: g.minuteMs, offered: g.entries.length })))
      .onConflict((oc) =>
        oc
          .columns(['key_id', 'minute_ms'])
          .doUpdateSet({ offered: sql`failure_offered.offered + excluded.offered` }),
      )
      .returning(['key_id', 'minute_ms', 'offered'])
      .execute();
    const added = new Map(slice.map((g) => [minuteOfKey(g.keyId, g.minuteMs), g.entries.length]));
    for (const r of rows) {
      const name = minuteOfKey(r.key_id, Number(r.minute_ms));
      before.set(name, Number(r.offered) - added.get(name)!);
    }
  }
  return before;
}

/**
 * Adds the failure logs a batch carries, inside `applyBatch`'s transaction: a batch applied once adds
 * its entries once. The bound of MAX_FAILURES_PER_KEY_MINUTE entries per key per minute is decided
 * here, against what every replica's batches brought, so it is exact across replicas; what it leaves
 * out is counted with what the replicas left out (docs/decisions/0115-failure-log-bound-across-replicas.md).
 */
export async function addFailures(trx: Db, batch: UsageBatch): Promise<void> {
  const groups = minutesOfKeys(batch);
  const before = await offeredBefore(trx, groups);
  const rows = [];
  /** Left-out counts by key, consumer, minute and code. */
  const leftOut = new Map<
    string,
    { key_id: string; consumer_id: string; minute_ms: number; code: string; left_out: number }
  >();
  const leaveOut = (keyId: string, consumerId: string, minuteMs: number, code: string, n: number) => {
    const name = `${keyId}|${leftOutKey(minuteMs, consumerId, code)}`;
    const row = leftOut.get(name);
    if (row) row.left_out += n;
    else
      leftOut.set(name, { key_id: keyId, consumer_id: consumerId, minute_ms: minuteMs, code, left_out: n });
  };
  for (const { keyId, minuteMs, entries } of groups) {
    const room = Math.max(0, MAX_FAILURES_PER_KEY_MINUTE - before.get(minuteOfKey(keyId, minuteMs))!);
    for (const e of entries.slice(room)) leaveOut(keyId, e.consumerId ?? '', minuteMs, e.code, 1);
    for (const e of entries.slice(0, room))
      rows.push({
        at_ms: e.atMs,
        request_id: e.requestId,
        key_id: keyId,
        consumer_id: e.consumerId ?? '',
        method: e.method,
        path: e.path,
        route_id: e.routeId,
        status: e.status,
        code: e.code,
        limit_rule: e.limit === null ? null : JSON.stringify(e.limit),
        client_address: e.clientAddress,
        customer_id: e.customerId,
        duration_ms: e.durationMs,
      });
  }
  for (const [keyId, usage] of batch)
    for (const [name, n] of usage.failures?.leftOut ?? []) {
      const parsed = parseLeftOutKey(name);
      if (parsed !== undefined) leaveOut(keyId, parsed.consumerId ?? '', parsed.minuteMs, parsed.code, n);
    }
  for (let i = 0; i < rows.length; i += CHUNK)
    await trx
      .insertInto('failure_log')
      .values(rows.slice(i, i + CHUNK))
      .execute();
  const counts = [...leftOut.values()];
  for (let i = 0; i < counts.length; i += CHUNK)
    await trx
      .insertInto('failure_left_out')
      .values(counts.slice(i, i + CHUNK))
      .onConflict((oc) =>
        oc
          .columns(['key_id', 'consumer_id', 'minute_ms', 'code'])
          .doUpdateSet({ left_out: sql`failure_left_out.left_out + excluded.left_out` }),
      )
      .execute();
}

/** The failure log as stored: pages of it, newest first, and retention. */
export class FailureLogRepository {
  constructor(private readonly db: Db) {}

  /** At most `limit` entries, newest first. */
  async list(q: FailureQuery): Promise<StoredFailure[]> {
    let query = this.db
      .selectFrom('failure_log')
      .selectAll()
      .where('at_ms', '>=', q.fromMs)
      .where('at_ms', '<', q.toMs);
    if ('keyId' in q.scope) query = query.where('key_id', '=', q.scope.keyId);
    if ('consumerId' in q.scope) query = query.where('consumer_id', '=', q.scope.consumerId);
    if (q.code !== undefined) query = query.where('code', '=', q.code);
    if (q.requestId !== undefined) query = query.where('request_id', '=', q.requestId);
    const after = q.after;
    if (after !== undefined)
      query = query.where((eb) =>
        eb.or([
          eb('at_ms', '<', after.at),
          eb.and([eb('at_ms', '=', after.at), eb('seq', '<', Number(after.id))]),
        ]),
      );
    const rows = await query.orderBy('at_ms', 'desc').orderBy('seq', 'desc').limit(q.limit).execute();
    return rows.map((r) => ({
      seq: String(r.seq),
      keyId: r.key_id,
      atMs: Number(r.at_ms),
      requestId: r.request_id,
      consumerId: r.consumer_id === '' ? null : r.consumer_id,
      method: r.method,
      path: r.path,
      routeId: r.route_id,
      status: Number(r.status),
      code: r.code,
      limit: r.limit_rule === null ? null : (JSON.parse(r.limit_rule) as FailedLimit),
      clientAddress: r.client_address,
      customerId: r.customer_id,
      durationMs: Number(r.duration_ms),
    }));
  }

  /** Failures of the range (and code) not kept, past the per-key-per-minute bound: in the minutes it overlaps. */
  async leftOut(q: Omit<FailureQuery, 'limit' | 'after' | 'requestId'>): Promise<number> {
    let query = this.db
      .selectFrom('failure_left_out')
      .select((eb) => eb.fn.sum<string | number | null>('left_out').as('n'))
      .where('minute_ms', '>', q.fromMs - 60_000)
      .where('minute_ms', '<', q.toMs);
    if ('keyId' in q.scope) query = query.where('key_id', '=', q.scope.keyId);
    if ('consumerId' in q.scope) query = query.where('consumer_id', '=', q.scope.consumerId);
    if (q.code !== undefined) query = query.where('code', '=', q.code);
    const row = await query.executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Deletes what is older than `beforeMs`, a slice at a time, under the prune lock; returns the rows deleted. */
  async prune(beforeMs: number, batch = 5_000): Promise<number> {
    return (
      (await deleteInSlices(this.db, 'failure_log', sql`at_ms < ${beforeMs}`, batch)) +
      (await deleteInSlices(this.db, 'failure_left_out', sql`minute_ms < ${beforeMs}`, batch)) +
      (await deleteInSlices(this.db, 'failure_offered', sql`minute_ms < ${beforeMs}`, batch))
    );
  }
}
