import { sql } from 'kysely';
import type { Db } from './db.js';
import type { ListPosition } from './key-repository.js';

/** Who made a change: the root token, or an admin token (its id and name at the time). */
export interface Actor {
  readonly type: 'root' | 'token';
  readonly id?: string;
  readonly name?: string;
}

export interface AuditEntry {
  readonly id: string;
  /** Insertion order: ties of `time` are broken by it (set by the database). */
  readonly seq?: number;
  readonly time: Date;
  readonly actor: Actor;
  readonly action: string;
  readonly target: { readonly type: string; readonly id: string };
  readonly requestId: string;
  readonly clientAddress: string;
  /** The target before and after, as the API shows it less every secret; null: it did not exist. */
  readonly changes: { readonly before: unknown; readonly after: unknown };
}

export interface AuditFilter {
  readonly action?: string;
  readonly targetId?: string;
  readonly actorId?: string;
  readonly from?: Date;
  readonly to?: Date;
}

const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

/** The audit log: written in the transaction of the change it records, read newest first. */
export class AuditRepository {
  constructor(private readonly db: Db) {}

  async insert(entry: AuditEntry): Promise<void> {
    await this.db
      .insertInto('audit_log')
      .values({
        id: entry.id,
        time: entry.time,
        actor_type: entry.actor.type,
        actor_id: entry.actor.id ?? null,
        actor_name: entry.actor.name ?? null,
        action: entry.action,
        target_type: entry.target.type,
        target_id: entry.target.id,
        request_id: entry.requestId,
        client_address: entry.clientAddress,
        before_state: json(entry.changes.before),
        after_state: json(entry.changes.after),
      })
      .execute();
  }

  /** Newest first by time, then insertion; `after` is the last entry of the previous page (`id`: its seq). */
  async list(filter: AuditFilter, after: ListPosition | undefined, limit: number): Promise<AuditEntry[]> {
    let query = this.db.selectFrom('audit_log').selectAll();
    if (after !== undefined) query = query.where(sql<boolean>`(time, seq) < (${new Date(after.at)}, ${Number(after.id)})`);
    if (filter.action !== undefined) query = query.where('action', '=', filter.action);
    if (filter.targetId !== undefined) query = query.where('target_id', '=', filter.targetId);
    if (filter.actorId !== undefined) query = query.where('actor_id', '=', filter.actorId);
    if (filter.from !== undefined) query = query.where('time', '>=', filter.from);
    if (filter.to !== undefined) query = query.where('time', '<', filter.to);
    const rows = await query.orderBy('time', 'desc').orderBy('seq', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      id: r.id,
      seq: Number(r.seq),
      time: r.time,
      actor: { type: r.actor_type, ...(r.actor_id !== null && { id: r.actor_id }), ...(r.actor_name !== null && { name: r.actor_name }) },
      action: r.action,
      target: { type: r.target_type, id: r.target_id },
      requestId: r.request_id,
      clientAddress: r.client_address,
      changes: { before: r.before_state === null ? null : JSON.parse(r.before_state), after: r.after_state === null ? null : JSON.parse(r.after_state) },
    }));
  }

  /** Deletes entries older than `before`, a few thousand rows per statement so no lock is held long. */
  async prune(before: Date, batch = 5_000): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await sql`
        delete from audit_log where id in (select id from audit_log where time < ${before} limit ${batch})`.execute(this.db);
      const n = Number(result.numAffectedRows ?? 0n);
      deleted += n;
      if (n < batch) return deleted;
    }
  }
}
