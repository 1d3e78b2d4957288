import type { EventType } from '../events/event-types.js';
import type { Db } from './db.js';

/** A webhook endpoint as stored, less its sealed secret. */
export interface WebhookRow {
  readonly id: string;
  readonly url: string;
  readonly events: readonly EventType[];
  readonly description: string;
  readonly enabled: boolean;
  readonly createdAt: Date;
  readonly lastUpdated: Date;
  /** The first failed attempt since the last success; null: the last attempt succeeded, or none failed. */
  readonly failingSince: Date | null;
  /** Set when Tollgate disabled it after DISABLE_AFTER_MS of failures. */
  readonly disabledAt: Date | null;
  readonly disabledReason: string | null;
}

/** What an administrator sets on a webhook. */
export interface WebhookSettings {
  readonly url: string;
  readonly events: readonly EventType[];
  readonly description: string;
  readonly enabled: boolean;
}

const columns = [
  'id',
  'url',
  'events',
  'description',
  'enabled',
  'created_at as createdAt',
  'last_updated as lastUpdated',
  'failing_since as failingSince',
  'disabled_at as disabledAt',
  'disabled_reason as disabledReason',
] as const;

type Selected = Omit<WebhookRow, 'events'> & { events: string };
const toRow = (row: Selected): WebhookRow => ({ ...row, events: JSON.parse(row.events) as EventType[] });

/** Webhook endpoints: their settings, sealed signing secrets, and the failures that disable them. */
export class WebhookRepository {
  constructor(private readonly db: Db) {}

  async insert(
    webhook: WebhookSettings & { id: string; secretCiphertext: Buffer; createdAt: Date },
  ): Promise<void> {
    await this.db
      .insertInto('webhooks')
      .values({
        id: webhook.id,
        url: webhook.url,
        events: JSON.stringify(webhook.events),
        description: webhook.description,
        enabled: webhook.enabled,
        secret_ciphertext: webhook.secretCiphertext,
        created_at: webhook.createdAt,
        last_updated: webhook.createdAt,
      })
      .execute();
  }

  async get(id: string): Promise<WebhookRow | undefined> {
    const row = await this.db.selectFrom('webhooks').select(columns).where('id', '=', id).executeTakeFirst();
    return row && toRow(row);
  }

  /** Every webhook, oldest first. */
  async list(): Promise<WebhookRow[]> {
    const rows = await this.db
      .selectFrom('webhooks')
      .select(columns)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toRow);
  }

  /**
   * Changes the settings named; returns the webhook as it now is. Enabling starts afresh (no failures
   * counted); either way a reason Tollgate gave for disabling it no longer applies.
   */
  async update(id: string, changes: Partial<WebhookSettings>, now: Date): Promise<WebhookRow | undefined> {
    const row = await this.db
      .updateTable('webhooks')
      .set({
        ...(changes.url !== undefined && { url: changes.url }),
        ...(changes.events !== undefined && { events: JSON.stringify(changes.events) }),
        ...(changes.description !== undefined && { description: changes.description }),
        ...(changes.enabled !== undefined && {
          enabled: changes.enabled,
          disabled_at: null,
          disabled_reason: null,
        }),
        ...(changes.enabled === true && { failing_since: null }),
        last_updated: now,
      })
      .where('id', '=', id)
      .returning(columns)
      .executeTakeFirst();
    return row && toRow(row);
  }

  /** Replaces its sealed signing secret; returns the webhook as it now is. */
  async replaceSecret(id: string, secretCiphertext: Buffer, now: Date): Promise<WebhookRow | undefined> {
    const row = await this.db
      .updateTable('webhooks')
      .set({ secret_ciphertext: secretCiphertext, last_updated: now })
      .where('id', '=', id)
      .returning(columns)
      .executeTakeFirst();
    return row && toRow(row);
  }

  /** Deletes a webhook and its deliveries; returns what it was. */
  async delete(id: string): Promise<WebhookRow | undefined> {
    const row = await this.db
      .deleteFrom('webhooks')
      .where('id', '=', id)
      .returning(columns)
      .executeTakeFirst();
    return row && toRow(row);
  }

  /** The enabled webhooks, for fanning events out. */
  async subscribers(): Promise<WebhookRow[]> {
    const rows = await this.db.selectFrom('webhooks').select(columns).where('enabled', '=', true).execute();
    return rows.map(toRow);
  }

  async secretCiphertext(id: string): Promise<Uint8Array | undefined> {
    const row = await this.db
      .selectFrom('webhooks')
      .select('secret_ciphertext')
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.secret_ciphertext;
  }

  /** An attempt succeeded: the webhook is failing no more. */
  async succeeded(id: string): Promise<void> {
    await this.db
      .updateTable('webhooks')
      .set({ failing_since: null })
      .where('id', '=', id)
      .where('failing_since', 'is not', null)
      .execute();
  }

  /**
   * An attempt at `at` failed. Returns the webhook as it was, with the first failure of the run, when
   * the run has now lasted `disableAfterMs` and Tollgate disabled it (in this transaction); otherwise
   * undefined.
   */
  async failed(
    id: string,
    at: Date,
    disableAfterMs: number,
    reason: (failingSince: Date) => string,
  ): Promise<{ before: WebhookRow; after: WebhookRow } | undefined> {
    await this.db
      .updateTable('webhooks')
      .set({ failing_since: at })
      .where('id', '=', id)
      .where('failing_since', 'is', null)
      .execute();
    const before = await this.get(id);
    if (
      !before?.enabled ||
      before.failingSince === null ||
      at.getTime() - before.failingSince.getTime() < disableAfterMs
    )
      return undefined;
    const after = await this.db
      .updateTable('webhooks')
      .set({
        enabled: false,
        disabled_at: at,
        disabled_reason: reason(before.failingSince),
        last_updated: at,
      })
      .where('id', '=', id)
      .where('enabled', '=', true)
      .returning(columns)
      .executeTakeFirst();
    return after && { before, after: toRow(after) };
  }

  /** Every sealed secret, for re-sealing with a new SECRET_ENCRYPTION_KEY (rotate-secrets). */
  async allCiphertexts(): Promise<{ id: string; secretCiphertext: Uint8Array }[]> {
    return this.db.selectFrom('webhooks').select(['id', 'secret_ciphertext as secretCiphertext']).execute();
  }

  async updateCiphertext(id: string, secretCiphertext: Buffer): Promise<void> {
    await this.db
      .updateTable('webhooks')
      .set({ secret_ciphertext: secretCiphertext })
      .where('id', '=', id)
      .execute();
  }
}
