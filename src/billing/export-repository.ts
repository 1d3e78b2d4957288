import type { Db } from '../store/db.js';
import type { ListPosition } from '../store/list-position.js';
import { sqlDialectOf, type SqlDialect } from '../store/sql-dialect.js';
import type {
  BillingExport,
  BillingExportChanges,
  ExportInterval,
  ExportSubject,
  ExportType,
} from './billing-export.js';

const columns = [
  'id',
  'type',
  'url',
  'stream_url as streamUrl',
  'credential_ciphertext as credentialCiphertext',
  'event_name as eventName',
  'granularity as interval',
  'subject',
  'customer_field as customerField',
  'created_at as createdAt',
  'last_updated as lastUpdated',
  'deliver_after as deliverAfter',
  'delivery_failures as deliveryFailures',
  'retry_after as retryAfter',
] as const;

type Row = Omit<BillingExport, 'type' | 'interval' | 'subject' | 'deliveryFailures'> & {
  type: string;
  interval: string;
  subject: string;
  deliveryFailures: number | string;
};

/** The schema's checks allow only these values. */
const exportOf = (row: Row): BillingExport => ({
  ...row,
  type: row.type as ExportType,
  interval: row.interval as ExportInterval,
  subject: row.subject as ExportSubject,
  deliveryFailures: Number(row.deliveryFailures),
});

/** Billing exports: their settings, the lease that lets one replica at a time run one, its backoff. */
export class BillingExportRepository {
  private readonly dialect: SqlDialect;

  constructor(private readonly db: Db) {
    this.dialect = sqlDialectOf(db);
  }

  async insert(
    e: Omit<BillingExport, 'lastUpdated' | 'deliverAfter' | 'deliveryFailures' | 'retryAfter'>,
  ): Promise<void> {
    await this.db
      .insertInto('billing_exports')
      .values({
        id: e.id,
        type: e.type,
        url: e.url,
        stream_url: e.streamUrl,
        credential_ciphertext: e.credentialCiphertext,
        event_name: e.eventName,
        granularity: e.interval,
        subject: e.subject,
        customer_field: e.customerField,
        created_at: e.createdAt,
        last_updated: e.createdAt,
      })
      .execute();
  }

  /** `forUpdate`: inside a transaction, hold the row until it ends (a change, or a run's plan). */
  async get(id: string, forUpdate = false): Promise<BillingExport | undefined> {
    const query = this.db.selectFrom('billing_exports').select(columns).where('id', '=', id);
    const row = await (forUpdate ? this.dialect.lockRows(query, 'update') : query).executeTakeFirst();
    return row && exportOf(row);
  }

  /** Oldest first by creation time, then id; `after` is the last export of the previous page. */
  async list(after: ListPosition | undefined, limit: number): Promise<BillingExport[]> {
    const rows = await this.db
      .selectFrom('billing_exports')
      .select(columns)
      .$if(after !== undefined, (q) =>
        q.where((eb) =>
          eb.or([
            eb('created_at', '>', new Date(after!.at)),
            eb.and([eb('created_at', '=', new Date(after!.at)), eb('id', '>', after!.id)]),
          ]),
        ),
      )
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(exportOf);
  }

  /** Every export's id, for the scheduler. */
  async ids(): Promise<string[]> {
    return (
      await this.db.selectFrom('billing_exports').select('id').orderBy('created_at').orderBy('id').execute()
    ).map((r) => r.id);
  }

  async update(id: string, changes: BillingExportChanges, now: Date): Promise<BillingExport | undefined> {
    await this.db
      .updateTable('billing_exports')
      .set({
        ...(changes.url !== undefined && { url: changes.url }),
        ...(changes.streamUrl !== undefined && { stream_url: changes.streamUrl }),
        ...(changes.credentialCiphertext !== undefined && {
          credential_ciphertext: changes.credentialCiphertext,
        }),
        ...(changes.eventName !== undefined && { event_name: changes.eventName }),
        ...(changes.customerField !== undefined && { customer_field: changes.customerField }),
        last_updated: now,
      })
      .where('id', '=', id)
      .execute();
    return this.get(id);
  }

  /** Deletes the export with its ledger, sends and runs; false when none had that id. */
  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('billing_exports').where('id', '=', id).executeTakeFirst();
    return (result.numDeletedRows ?? 0n) > 0n;
  }

  /**
   * Takes (or renews) the export's lease for `holder` at `now` (Tollgate's clock) when it is free,
   * already `holder`'s, or was last renewed longer than `ttlMs` before `now` (its holder died or hangs).
   */
  async takeLease(id: string, holder: string, now: Date, ttlMs: number): Promise<boolean> {
    const result = await this.db
      .updateTable('billing_exports')
      .set({ lease_holder: holder, lease_taken_at: now })
      .where('id', '=', id)
      .where((eb) =>
        eb.or([
          eb('lease_holder', 'is', null),
          eb('lease_holder', '=', holder),
          eb('lease_taken_at', '<', new Date(now.getTime() - ttlMs)),
        ]),
      )
      .executeTakeFirst();
    return (result.numUpdatedRows ?? 0n) > 0n;
  }

  async releaseLease(id: string, holder: string): Promise<void> {
    await this.db
      .updateTable('billing_exports')
      .set({ lease_holder: null, lease_taken_at: null })
      .where('id', '=', id)
      .where('lease_holder', '=', holder)
      .execute();
  }

  /**
   * The receiver failed again: scheduled runs send nothing before `deliverAfter`, and no run at all
   * before `retryAfter` (the receiver's Retry-After; null: it named none).
   */
  async deliveryFailed(
    id: string,
    failures: number,
    deliverAfter: Date,
    retryAfter: Date | null,
  ): Promise<void> {
    await this.db
      .updateTable('billing_exports')
      .set({ delivery_failures: failures, deliver_after: deliverAfter, retry_after: retryAfter })
      .where('id', '=', id)
      .execute();
  }

  async deliveryWorked(id: string): Promise<void> {
    await this.db
      .updateTable('billing_exports')
      .set({ delivery_failures: 0, deliver_after: null, retry_after: null })
      .where('id', '=', id)
      .where('delivery_failures', '>', 0)
      .execute();
  }

  /** For rotate-secrets: every stored credential. */
  async allCiphertexts(): Promise<{ id: string; secretCiphertext: Uint8Array }[]> {
    const rows = await this.db
      .selectFrom('billing_exports')
      .select(['id', 'credential_ciphertext'])
      .where('credential_ciphertext', 'is not', null)
      .execute();
    return rows.map((r) => ({ id: r.id, secretCiphertext: r.credential_ciphertext! }));
  }

  async updateCiphertext(id: string, ciphertext: Buffer): Promise<void> {
    await this.db
      .updateTable('billing_exports')
      .set({ credential_ciphertext: ciphertext })
      .where('id', '=', id)
      .execute();
  }
}
