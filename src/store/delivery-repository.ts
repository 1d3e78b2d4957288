import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { EventType } from '../events/event-types.js';
import type { Db } from './db.js';
import type { ListPosition } from './list-position.js';
import { WebhookRepository } from './webhook-repository.js';

export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** One event for one webhook: its attempts so far and the next one. */
export interface DeliveryRow {
  readonly id: string;
  readonly webhookId: string;
  readonly eventId: string;
  readonly eventType: EventType;
  readonly createdAt: Date;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly firstAttemptAt: Date | null;
  readonly lastAttemptAt: Date | null;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly nextAttemptAt: Date | null;
}

/** A delivery whose attempt is due, with what sending it needs. */
export interface DueDelivery {
  readonly id: string;
  readonly webhookId: string;
  readonly eventId: string;
  /** The attempts recorded so far: the version a claim and its outcome are written against. */
  readonly attempts: number;
  readonly firstAttemptAt: Date | null;
  readonly url: string;
  /** The webhook's signing secret, sealed. */
  readonly secretCiphertext: Uint8Array;
  readonly payload: string;
}

/** What one attempt came to. */
export interface AttemptOutcome {
  readonly at: Date;
  /** The receiver's HTTP status; null: no answer. */
  readonly status: number | null;
  /** Why it failed when no status says it (a timeout, a refused or closed connection). */
  readonly error: string | null;
  readonly delivered: boolean;
  /** When to try again; null: never (delivered, or no attempt left). */
  readonly nextAttemptAt: Date | null;
}

const columns = [
  'id',
  'webhook_id as webhookId',
  'event_id as eventId',
  'event_type as eventType',
  'created_at as createdAt',
  'state',
  'attempts',
  'first_attempt_at as firstAttemptAt',
  'last_attempt_at as lastAttemptAt',
  'last_status as lastStatus',
  'last_error as lastError',
  'next_attempt_at as nextAttemptAt',
] as const;

const toRow = (row: Omit<DeliveryRow, 'eventType'> & { eventType: string }): DeliveryRow => ({
  ...row,
  eventType: row.eventType as EventType,
});

export function generateDeliveryId(): string {
  return 'dlv_' + randomBytes(16).toString('base64url');
}

/** Rows per insert: well under the parameters either database takes in one statement. */
const INSERT_ROWS = 500;

/** Deliveries of events to webhooks: made from the outbox, sent by the delivery worker, listed and retried by administrators. */
export class DeliveryRepository {
  constructor(private readonly db: Db) {}

  /**
   * Turns up to `batch` events of the outbox into one delivery per enabled webhook subscribed to the
   * event's type and created no later than it happened, due at once; run in a transaction. Returns the
   * events fanned out. A delivery already made (by a worker that overlapped this one) is kept.
   */
  async fanOut(now: Date, batch: number): Promise<number> {
    const events = await this.db
      .selectFrom('outbox_events')
      .select(['id', 'type', 'occurred_at as occurredAt'])
      .where(sql<boolean>`not fanned_out`)
      .orderBy('seq')
      .limit(batch)
      .execute();
    if (events.length === 0) return 0;
    const webhooks = await new WebhookRepository(this.db).subscribers();
    const deliveries = events.flatMap((event) =>
      webhooks
        .filter(
          (webhook) =>
            webhook.events.includes(event.type as EventType) &&
            webhook.createdAt.getTime() <= event.occurredAt.getTime(),
        )
        .map((webhook) => ({
          id: generateDeliveryId(),
          webhook_id: webhook.id,
          event_id: event.id,
          event_type: event.type,
          created_at: now,
          state: 'pending' as const,
          next_attempt_at: now,
        })),
    );
    for (let i = 0; i < deliveries.length; i += INSERT_ROWS) {
      await this.db
        .insertInto('webhook_deliveries')
        .values(deliveries.slice(i, i + INSERT_ROWS))
        .onConflict((conflict) => conflict.columns(['webhook_id', 'event_id']).doNothing())
        .execute();
    }
    await this.db
      .updateTable('outbox_events')
      .set({ fanned_out: true })
      .where(
        'id',
        'in',
        events.map((event) => event.id),
      )
      .execute();
    return events.length;
  }

  /**
   * Deliveries of enabled webhooks due at `now`, earliest first: at most `perWebhook` of each webhook,
   * so that one slow or dead receiver with a backlog cannot hold back the others, and `limit` in all.
   */
  async due(now: Date, perWebhook: number, limit: number): Promise<DueDelivery[]> {
    const result = await sql<DueDelivery>`
      select id, "webhookId", "eventId", attempts, "firstAttemptAt", url, "secretCiphertext", payload from (
        select d.id, d.webhook_id as "webhookId", d.event_id as "eventId", d.attempts, d.first_attempt_at as "firstAttemptAt",
          d.next_attempt_at, w.url, w.secret_ciphertext as "secretCiphertext", e.payload,
          row_number() over (partition by d.webhook_id order by d.next_attempt_at, d.id) as place
        from webhook_deliveries d
          join webhooks w on w.id = d.webhook_id
          join outbox_events e on e.id = d.event_id
        where d.next_attempt_at <= ${now} and w.enabled
      ) due
      where place <= ${perWebhook}
      order by next_attempt_at, id
      limit ${limit}`.execute(this.db);
    return result.rows.map((row) => ({ ...row, attempts: Number(row.attempts) }));
  }

  /**
   * Marks a due delivery as being sent until `until`: no worker picks it again before then, and if
   * its outcome is never recorded (the sender died) it is due again then. False when another worker
   * claimed or recorded it first.
   */
  async claim(delivery: Pick<DueDelivery, 'id' | 'attempts'>, now: Date, until: Date): Promise<boolean> {
    const claimed = await this.db
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: until })
      .where('id', '=', delivery.id)
      .where('attempts', '=', delivery.attempts)
      .where('next_attempt_at', '<=', now)
      .returning('id')
      .executeTakeFirst();
    return claimed !== undefined;
  }

  /** Records an attempt of a claimed delivery; false when another worker recorded one since the claim. */
  async record(
    delivery: Pick<DueDelivery, 'id' | 'attempts' | 'firstAttemptAt'>,
    outcome: AttemptOutcome,
  ): Promise<boolean> {
    const recorded = await this.db
      .updateTable('webhook_deliveries')
      .set({
        attempts: delivery.attempts + 1,
        first_attempt_at: delivery.firstAttemptAt ?? outcome.at,
        last_attempt_at: outcome.at,
        last_status: outcome.status,
        last_error: outcome.error,
        state: outcome.delivered ? 'delivered' : outcome.nextAttemptAt === null ? 'failed' : 'pending',
        next_attempt_at: outcome.nextAttemptAt,
      })
      .where('id', '=', delivery.id)
      .where('attempts', '=', delivery.attempts)
      .returning('id')
      .executeTakeFirst();
    return recorded !== undefined;
  }

  async get(webhookId: string, id: string): Promise<DeliveryRow | undefined> {
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .select(columns)
      .where('webhook_id', '=', webhookId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toRow(row);
  }

  /** A webhook's deliveries, newest first; `after` is the last of the previous page. */
  async list(webhookId: string, after: ListPosition | undefined, limit: number): Promise<DeliveryRow[]> {
    let query = this.db.selectFrom('webhook_deliveries').select(columns).where('webhook_id', '=', webhookId);
    if (after !== undefined)
      query = query.where(sql<boolean>`(created_at, id) < (${new Date(after.at)}, ${after.id})`);
    const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toRow);
  }

  /** Makes a delivery due now, whatever its state; returns it as it now is. */
  async retry(webhookId: string, id: string, now: Date): Promise<DeliveryRow | undefined> {
    const row = await this.db
      .updateTable('webhook_deliveries')
      .set({ state: 'pending', next_attempt_at: now })
      .where('webhook_id', '=', webhookId)
      .where('id', '=', id)
      .returning(columns)
      .executeTakeFirst();
    return row && toRow(row);
  }

  /**
   * Deletes events that happened before `before` and wait for no delivery (with their deliveries), a
   * few thousand per statement so no lock is held long. Returns how many.
   */
  async prune(before: Date, batch = 5_000): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await sql`
        delete from outbox_events where id in (
          select e.id from outbox_events e
          where e.occurred_at < ${before} and e.fanned_out
            and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.state = 'pending')
          limit ${batch})`.execute(this.db);
      const n = Number(result.numAffectedRows ?? 0n);
      deleted += n;
      if (n < batch) return deleted;
    }
  }
}
