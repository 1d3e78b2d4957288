import { sql } from 'kysely';
import type { Balance } from '../plans/balance.js';
import { creditColumns, creditsOfRow } from './credit-columns.js';
import type { Db } from './db.js';
import { sqlDialectOf, type SqlDialect } from './sql-dialect.js';
import { keyAuditColumns, withAllowedRoutes, type KeyAuditRow } from './key-row.js';
import type { ListPosition } from './list-position.js';

/** A consumer (docs/guides/consumers.md): the account that holds keys and the plan they share. */
export interface ConsumerRow {
  readonly id: string;
  readonly name: string;
  readonly externalId: string | null;
  /** The caller's JSON object as serialised. */
  readonly metadata: string;
  readonly rateLimitId: string | null;
  readonly createdAt: Date;
  readonly lastUpdated: Date;
  /** Keys that belong to it. */
  readonly keyCount: number;
  /** Its prepaid credits; null: none. */
  readonly balance: Balance | null;
  /** Bumped by every set of its balance, kept when it holds none (src/plans/balance.ts). */
  readonly creditsEpoch: number;
}

/** The fields an administrator sets on a consumer (create and PATCH). */
export interface ConsumerSettings {
  readonly name: string;
  readonly externalId: string | null;
  /** A JSON object as serialised. */
  readonly metadata: string;
  readonly rateLimitId: string | null;
}

/** Filters of the consumer list; absent fields do not filter. */
export interface ConsumerFilter {
  readonly externalId?: string;
  readonly namePrefix?: string;
  /** The name or the external id holds this, in any case. */
  readonly search?: string;
  readonly rateLimitId?: string;
}

const consumerColumns = [
  'c.id as id',
  'c.name as name',
  'c.external_id as externalId',
  'c.metadata as metadata',
  'c.rate_limit_id as rateLimitId',
  'c.created_at as createdAt',
  'c.last_updated as lastUpdated',
  sql<number>`(select count(*) from api_keys k where k.consumer_id = c.id)`.as('keyCount'),
  ...creditColumns('c', 'credits'),
] as const;

function toConsumer(
  row: Omit<ConsumerRow, 'keyCount' | 'balance' | 'creditsEpoch'> & { keyCount: string | number },
): ConsumerRow {
  const { balance, epoch } = creditsOfRow(row, 'credits');
  return {
    id: row.id,
    name: row.name,
    externalId: row.externalId,
    metadata: row.metadata,
    rateLimitId: row.rateLimitId,
    createdAt: row.createdAt,
    lastUpdated: row.lastUpdated,
    keyCount: Number(row.keyCount),
    balance,
    creditsEpoch: epoch,
  };
}

export class ConsumerRepository {
  private readonly dialect: SqlDialect;

  constructor(private readonly db: Db) {
    this.dialect = sqlDialectOf(db);
  }

  /** A second consumer with the same `externalId` breaks the unique constraint (SQLSTATE 23505). */
  async insert(consumer: ConsumerSettings & { id: string; createdAt: Date }): Promise<void> {
    await this.db
      .insertInto('consumers')
      .values({
        id: consumer.id,
        name: consumer.name,
        external_id: consumer.externalId,
        metadata: consumer.metadata,
        rate_limit_id: consumer.rateLimitId,
        created_at: consumer.createdAt,
        last_updated: consumer.createdAt,
      })
      .execute();
  }

  /**
   * `lock`, inside a transaction: `update` holds the row until it ends (the state before a change);
   * `key share` keeps it from being deleted meanwhile (a key being attached to it).
   */
  async get(id: string, lock?: 'update' | 'key share'): Promise<ConsumerRow | undefined> {
    let query = this.db.selectFrom('consumers as c').select(consumerColumns).where('c.id', '=', id);
    if (lock !== undefined) query = this.dialect.lockRows(query, lock);
    const row = await query.executeTakeFirst();
    return row && toConsumer(row);
  }

  /** Oldest first by creation time, then id; `after` is the last consumer of the previous page. */
  async list(filter: ConsumerFilter, after: ListPosition | undefined, limit: number): Promise<ConsumerRow[]> {
    let query = this.db.selectFrom('consumers as c').select(consumerColumns);
    if (after !== undefined)
      query = query.where(sql<boolean>`(c.created_at, c.id) > (${new Date(after.at)}, ${after.id})`);
    if (filter.externalId !== undefined) query = query.where('c.external_id', '=', filter.externalId);
    if (filter.rateLimitId !== undefined) query = query.where('c.rate_limit_id', '=', filter.rateLimitId);
    if (filter.namePrefix !== undefined)
      query = query.where(this.dialect.startsWith('name', filter.namePrefix));
    if (filter.search !== undefined) {
      const inName = this.dialect.containsIgnoringCase('c.name', filter.search);
      const inExternalId = this.dialect.containsIgnoringCase('c.external_id', filter.search);
      query = query.where(sql<boolean>`(${inName} or ${inExternalId})`);
    }
    const rows = await query.orderBy('c.created_at').orderBy('c.id').limit(limit).execute();
    return rows.map(toConsumer);
  }

  /**
   * Changes the given settings; returns the consumer as it now is, or undefined when it does not
   * exist. An `externalId` another consumer has breaks the unique constraint (SQLSTATE 23505).
   */
  async update(id: string, changes: Partial<ConsumerSettings>, now: Date): Promise<ConsumerRow | undefined> {
    const updated = await this.db
      .updateTable('consumers')
      .set({
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.externalId !== undefined && { external_id: changes.externalId }),
        ...(changes.metadata !== undefined && { metadata: changes.metadata }),
        ...(changes.rateLimitId !== undefined && { rate_limit_id: changes.rateLimitId }),
        last_updated: now,
      })
      .where('id', '=', id)
      .executeTakeFirst();
    return updated.numUpdatedRows > 0n ? this.get(id) : undefined;
  }

  /**
   * Deletes a consumer; run it in a transaction that has locked the consumer row (`get(id, 'update')`),
   * so a key being attached meanwhile waits and then finds no consumer. Its keys are detached first,
   * moving their `lastUpdated`; returns them as they now are (for the audit log).
   */
  async delete(id: string, now: Date): Promise<KeyAuditRow[]> {
    const detached = await this.db
      .updateTable('api_keys')
      .set({ consumer_id: null, last_updated: now })
      .where('consumer_id', '=', id)
      .returning(keyAuditColumns)
      .execute()
      .then((rows) => rows.map(withAllowedRoutes));
    await this.db.deleteFrom('consumers').where('id', '=', id).execute();
    return detached;
  }
}
