import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { deleteInSlices } from './history-repository.js';
import { parseLeftOutKey, type FailedLimit, type FailureEntry } from './failure-log.js';
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

/**
 * Adds the failure logs a batch carries, inside `applyBatch`'s transaction: a batch applied once adds
 * its entries once (docs/decisions/0084-failure-log.md).
 */
export async function addFailures(trx: Db, batch: UsageBatch): Promise<void> {
  const rows = [];
  const leftOut = [];
  for (const [keyId, usage] of batch) {
    if (usage.failures === undefined) continue;
    for (const e of usage.failures.entries)
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
    for (const [name, n] of usage.failures.leftOut) {
      const parsed = parseLeftOutKey(name);
      if (parsed === undefined) continue;
      leftOut.push({
        key_id: keyId,
        consumer_id: parsed.consumerId ?? '',
        minute_ms: parsed.minuteMs,
        code: parsed.code,
        left_out: n,
      });
    }
  }
  for (let i = 0; i < rows.length; i += CHUNK)
    await trx
      .insertInto('failure_log')
      .values(rows.slice(i, i + CHUNK))
      .execute();
  for (let i = 0; i < leftOut.length; i += CHUNK)
    await trx
      .insertInto('failure_left_out')
      .values(leftOut.slice(i, i + CHUNK))
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
      (await deleteInSlices(this.db, 'failure_left_out', sql`minute_ms < ${beforeMs}`, batch))
    );
  }
}
