import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { AuditAction } from './audit-actions.js';
import type { Db } from './db.js';
import type { ListPosition } from './list-position.js';

/**
 * Who made a change: the root token, an admin token (its id and name at the time), or Tollgate itself
 * (a webhook it disabled after three days of failures).
 */
export interface Actor {
  readonly type: 'root' | 'token' | 'system' | 'portal';
  readonly id?: string;
  readonly name?: string;
  /** A portal user's consumer (`type: 'portal'`): whose keys and plan they changed. */
  readonly consumerId?: string;
}

export interface AuditEntry {
  readonly id: string;
  /** Insertion order: ties of `time` are broken by it (set by the database). */
  readonly seq?: number;
  readonly time: Date;
  readonly actor: Actor;
  readonly action: AuditAction;
  readonly target: { readonly type: string; readonly id: string };
  readonly requestId: string;
  readonly clientAddress: string;
  /**
   * The target before and after as JSON text (kept as text, so members keep their order), as the
   * API shows it less every secret; null: it did not exist.
   */
  readonly changes: { readonly before: string | null; readonly after: string | null };
}

export interface AuditFilter {
  readonly action?: string;
  readonly targetId?: string;
  /** Changes made with the root token, or by Tollgate itself. */
  readonly actorType?: 'root' | 'system';
  /** Changes made with this admin token. */
  readonly actorId?: string;
  readonly from?: Date;
  readonly to?: Date;
}

export function generateAuditId(): string {
  return 'aud_' + randomBytes(12).toString('base64url');
}

/** The audit log: written in the transaction of the change it records, read newest first. */
export class AuditRepository {
  constructor(private readonly db: Db) {}

  /** Inserts in order (`seq` follows it), a thousand rows per statement (Postgres takes 65,535 parameters). */
  async insert(entries: readonly AuditEntry[]): Promise<void> {
    for (let i = 0; i < entries.length; i += 1_000) {
      await this.db
        .insertInto('audit_log')
        .values(
          entries.slice(i, i + 1_000).map((entry) => ({
            id: entry.id,
            time: entry.time,
            actor_type: entry.actor.type,
            actor_id: entry.actor.id ?? null,
            actor_name: entry.actor.name ?? null,
            actor_consumer_id: entry.actor.consumerId ?? null,
            action: entry.action,
            target_type: entry.target.type,
            target_id: entry.target.id,
            request_id: entry.requestId,
            client_address: entry.clientAddress,
            before_state: entry.changes.before,
            after_state: entry.changes.after,
          })),
        )
        .execute();
    }
  }

  /** Newest first by time, then insertion; `after` is the last entry of the previous page (`id`: its seq). */
  async list(filter: AuditFilter, after: ListPosition | undefined, limit: number): Promise<AuditEntry[]> {
    let query = this.db.selectFrom('audit_log').selectAll();
    if (after !== undefined)
      query = query.where(sql<boolean>`(time, seq) < (${new Date(after.at)}, ${Number(after.id)})`);
    if (filter.action !== undefined) query = query.where('action', '=', filter.action);
    if (filter.targetId !== undefined) query = query.where('target_id', '=', filter.targetId);
    if (filter.actorType !== undefined) query = query.where('actor_type', '=', filter.actorType);
    if (filter.actorId !== undefined) query = query.where('actor_id', '=', filter.actorId);
    if (filter.from !== undefined) query = query.where('time', '>=', filter.from);
    if (filter.to !== undefined) query = query.where('time', '<', filter.to);
    const rows = await query.orderBy('time', 'desc').orderBy('seq', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      id: r.id,
      seq: Number(r.seq),
      time: r.time,
      actor: {
        type: r.actor_type,
        ...(r.actor_id !== null && { id: r.actor_id }),
        ...(r.actor_name !== null && { name: r.actor_name }),
        ...(r.actor_consumer_id !== null && { consumerId: r.actor_consumer_id }),
      },
      // Written only as an `AuditAction`.
      action: r.action as AuditAction,
      target: { type: r.target_type, id: r.target_id },
      requestId: r.request_id,
      clientAddress: r.client_address,
      changes: { before: r.before_state, after: r.after_state },
    }));
  }

  /**
   * Entries recorded at or after `since` for changes that can make a cached key stale (of keys, plans
   * and consumers, creations aside) or the route table (every change of a route, creations too): what
   * each replica reads besides the change messages.
   */
  async keyChangesSince(
    since: Date,
  ): Promise<{ id: string; targetType: string; targetId: string; time: Date }[]> {
    return this.db
      .selectFrom('audit_log')
      .select(['id', 'target_type as targetType', 'target_id as targetId', 'time'])
      .where('time', '>=', since)
      .where('target_type', 'in', ['key', 'plan', 'consumer', 'route'])
      .where('action', 'not in', ['key.create', 'plan.create', 'consumer.create'])
      .execute();
  }

  /** Deletes entries older than `before`, a few thousand rows per statement so no lock is held long. */
  async prune(before: Date, batch = 5_000): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await sql`
        delete from audit_log where id in (select id from audit_log where time < ${before} limit ${batch})`.execute(
        this.db,
      );
      const n = Number(result.numAffectedRows ?? 0n);
      deleted += n;
      if (n < batch) return deleted;
    }
  }
}
