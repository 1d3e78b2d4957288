/**
 * The outbox (docs/decisions/0028): the one way an event enters Tollgate. A
 * producer adds its events with the repositories of its own transaction, so the change and its events
 * are stored together or not at all; the delivery worker (src/webhooks/) sends them afterwards. It is a
 * repository of the store, so that every concern above it can produce: the management API (key and
 * consumer changes), keys (key.expiring), and later the limiter (quota.threshold), credits
 * (credits.low, credits.exhausted) and the billing export (usage.exported).
 */
import { randomBytes } from 'node:crypto';
import type { Db } from './db.js';
import type { EventType } from '../events/event-types.js';

export interface NewEvent {
  readonly type: EventType;
  /**
   * The event's `data` as JSON text (an object): what the API shows of its subject, never a secret,
   * token, hash or ciphertext.
   */
  readonly data: string;
  /** When it happened: the body's `timestamp`. */
  readonly at: Date;
  /**
   * Emit at most once under `key` until `until`, however many replicas or runs try: the first
   * transaction to commit it wins, the others add nothing (a threshold of a limit in one window, a
   * key's expiry notice). Pick `until` no earlier than the last moment anyone may try again.
   */
  readonly once?: { readonly key: string; readonly until: Date };
}

export function generateEventId(): string {
  return 'evt_' + randomBytes(16).toString('base64url');
}

/** The delivery body, `{type, timestamp, data}`, as JSON text: `data` placed as written. */
export function eventPayload(type: EventType, at: Date, data: string): string {
  return `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(at.toISOString())},"data":${data}}`;
}

/** Rows per insert, and once-keys per look-up: well under the parameters either database takes in one statement. */
const INSERT_ROWS = 1_000;
const LOOKUP_KEYS = 1_000;

/** Writes events in the transaction it was made with. */
export class Outbox {
  constructor(private readonly trx: Db) {}

  /** Adds `events` in order; returns the ids of those written (a `once` key already used writes nothing). */
  async add(events: readonly NewEvent[]): Promise<string[]> {
    const rows = [];
    for (const event of events) {
      if (event.once && !(await this.claimOnce(event.once.key, event.once.until))) continue;
      rows.push({
        id: generateEventId(),
        type: event.type,
        occurred_at: event.at,
        payload: eventPayload(event.type, event.at, event.data),
      });
    }
    for (let i = 0; i < rows.length; i += INSERT_ROWS)
      await this.trx
        .insertInto('outbox_events')
        .values(rows.slice(i, i + INSERT_ROWS))
        .execute();
    return rows.map((row) => row.id);
  }

  /** Whether this transaction is the first to use `key`: it holds the row until it commits or rolls back. */
  private async claimOnce(key: string, until: Date): Promise<boolean> {
    const claimed = await this.trx
      .insertInto('outbox_once')
      .values({ key, until })
      .onConflict((conflict) => conflict.column('key').doNothing())
      .returning('key')
      .executeTakeFirst();
    return claimed !== undefined;
  }

  /**
   * Which of `keys` were used already: lets a producer that checks many candidates (every key near its
   * expiry) skip the known ones before it builds their events. `add` stays the judge.
   */
  async usedOnceKeys(keys: readonly string[]): Promise<Set<string>> {
    const used = new Set<string>();
    for (let i = 0; i < keys.length; i += LOOKUP_KEYS) {
      const rows = await this.trx
        .selectFrom('outbox_once')
        .select('key')
        .where('key', 'in', keys.slice(i, i + LOOKUP_KEYS))
        .execute();
      for (const row of rows) used.add(row.key);
    }
    return used;
  }

  /** Forgets once-keys whose time has passed. */
  async pruneOnce(now: Date): Promise<void> {
    await this.trx.deleteFrom('outbox_once').where('until', '<', now).execute();
  }
}
