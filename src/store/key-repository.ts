/**
 * The keys of `api_keys`: the look-ups the management API, the portal and the proxy make, and each
 * change of a key's life (create, change, roll, plan, last use, delete, re-sealed secrets). A key's
 * row is read and written as in key-row.ts; what the proxy admits a request by, as in key-with-plan.ts.
 */
import { sql } from 'kysely';
import type { Db } from './db.js';
import { afterPosition, orderBy, sortValue, type KeyOrder, type KeyPosition } from './key-list-order.js';
import {
  allowedListColumn,
  keyColumns,
  toKeyRow,
  type KeyLeak,
  type KeyRow,
  type KeySettings,
} from './key-row.js';
import { keysWithPlans, keyWithPlanOf, type KeyForToken, type KeyWithPlan } from './key-with-plan.js';
import { sqlDialectOf, type SqlDialect } from './sql-dialect.js';

/** Filters of the key list; absent fields do not filter. */
export interface KeyFilter {
  readonly rateLimitId?: string;
  readonly enabled?: boolean;
  readonly externalId?: string;
  readonly namePrefix?: string;
  /** The name starts with this, ignoring case. */
  readonly name?: string;
  readonly consumerId?: string;
}

/** A key of the list, with the value it is sorted by (see key-list-order.ts). */
export interface ListedKey extends KeyRow {
  readonly sortValue: number | null;
}

export class KeyRepository {
  private readonly dialect: SqlDialect;

  constructor(private readonly db: Db) {
    this.dialect = sqlDialectOf(db);
  }

  /** Settings left out take the defaults: enabled, no expiry, no owner, `{}`, no plan, no consumer. */
  async insert(
    key: Pick<KeySettings, 'name'> &
      Partial<KeySettings> & {
        id: string;
        secretHash: Buffer;
        secretCiphertext: Buffer;
        rateLimitId?: string | null;
        createdAt: Date;
      },
  ): Promise<void> {
    await this.db
      .insertInto('api_keys')
      .values({
        id: key.id,
        name: key.name,
        secret_hash: key.secretHash,
        secret_ciphertext: key.secretCiphertext,
        rate_limit_id: key.rateLimitId ?? null,
        created_at: key.createdAt,
        last_updated: key.createdAt,
        enabled: key.enabled ?? true,
        expires_at: key.expiresAt ?? null,
        external_id: key.externalId ?? null,
        metadata: key.metadata ?? '{}',
        consumer_id: key.consumerId ?? null,
        allowed_route_ids: allowedListColumn(key.allowedRouteIds ?? null),
        allowed_origins: allowedListColumn(key.allowedOrigins ?? null),
        allowed_addresses: allowedListColumn(key.allowedAddresses ?? null),
      })
      .execute();
  }

  /** The ids of the keys a consumer holds now. */
  async idsOfConsumer(consumerId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .select('id')
      .where('consumer_id', '=', consumerId)
      .execute();
    return rows.map((row) => row.id);
  }

  /** The keys `filter` lets through. */
  private filtered(filter: KeyFilter) {
    let query = this.db.selectFrom('api_keys');
    if (filter.rateLimitId !== undefined) query = query.where('rate_limit_id', '=', filter.rateLimitId);
    if (filter.enabled !== undefined) query = query.where('enabled', '=', filter.enabled);
    if (filter.externalId !== undefined) query = query.where('external_id', '=', filter.externalId);
    if (filter.namePrefix !== undefined)
      query = query.where(this.dialect.startsWith('name', filter.namePrefix));
    if (filter.name !== undefined)
      query = query.where(this.dialect.startsWithIgnoringCase('name', filter.name));
    if (filter.consumerId !== undefined) query = query.where('consumer_id', '=', filter.consumerId);
    return query;
  }

  /** One page of the keys `filter` lets through, in `order`; `after` is the last key of the previous page. */
  async list(
    filter: KeyFilter,
    order: KeyOrder,
    after: KeyPosition | undefined,
    limit: number,
  ): Promise<ListedKey[]> {
    let query = this.filtered(filter).select(keyColumns).select(sortValue(order).as('sortValue'));
    if (after !== undefined) query = query.where(afterPosition(order, after));
    const rows = await query.orderBy(orderBy(order)).limit(limit).execute();
    return rows.map((row) => {
      const value = row.sortValue as Date | number | string | null;
      return {
        ...toKeyRow(row),
        sortValue: value === null ? null : value instanceof Date ? value.getTime() : Number(value),
      };
    });
  }

  /** How many keys `filter` lets through, counted up to `atMost` (a bound on the work, however many keys). */
  async count(filter: KeyFilter, atMost: number): Promise<number> {
    const row = await this.db
      .selectFrom(this.filtered(filter).select(sql.lit(1).as('one')).limit(atMost).as('matching'))
      .select((eb) => eb.fn.countAll().as('count'))
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  /** `forUpdate`: inside a transaction, hold the row until it ends (the state before a change). */
  async get(id: string, forUpdate = false): Promise<KeyRow | undefined> {
    let query = this.db.selectFrom('api_keys').select(keyColumns).where('id', '=', id);
    if (forUpdate) query = this.dialect.lockRows(query, 'update');
    const row = await query.executeTakeFirst();
    return row && toKeyRow(row);
  }

  /** The key a secret opens: its current secret, or the previous one of a roll (ended grace included). */
  async findBySecretHash(secretHash: Buffer): Promise<KeyWithPlan | undefined> {
    const row = await keysWithPlans(this.db)
      .where((eb) =>
        eb.or([eb('k.secret_hash', '=', secretHash), eb('k.previous_secret_hash', '=', secretHash)]),
      )
      .executeTakeFirst();
    if (!row) return undefined;
    const isPrevious = !secretHash.equals(Buffer.from(row.secretHash));
    // A previous secret without an end cannot be stored; treat one as already ended.
    return keyWithPlanOf(row, isPrevious ? (row.previousSecretExpiresAt?.getTime() ?? 0) : null);
  }

  /**
   * The key a token names by id, with its secrets sealed (docs/decisions/0091): the current one, and
   * a rolled one's with the end of its grace (null: none).
   */
  async findForToken(id: string): Promise<KeyForToken | undefined> {
    const row = await keysWithPlans(this.db)
      .select([
        'k.secret_ciphertext as secretCiphertext',
        'k.previous_secret_ciphertext as previousCiphertext',
      ])
      .where('k.id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    const previousUntil = row.previousSecretExpiresAt?.getTime();
    return {
      key: keyWithPlanOf(row, null),
      secretCiphertext: row.secretCiphertext,
      previous:
        row.previousCiphertext === null || previousUntil === undefined
          ? null
          : { ciphertext: row.previousCiphertext, untilMs: previousUntil },
    };
  }

  /** Changes the given settings; returns the key as it now is, or undefined when it does not exist. */
  async update(id: string, changes: Partial<KeySettings>, now: Date): Promise<KeyRow | undefined> {
    const row = await this.db
      .updateTable('api_keys')
      .set({
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.enabled !== undefined && { enabled: changes.enabled }),
        ...(changes.disabledInPortal !== undefined && { disabled_in_portal: changes.disabledInPortal }),
        ...(changes.expiresAt !== undefined && { expires_at: changes.expiresAt }),
        ...(changes.externalId !== undefined && { external_id: changes.externalId }),
        ...(changes.metadata !== undefined && { metadata: changes.metadata }),
        ...(changes.consumerId !== undefined && { consumer_id: changes.consumerId }),
        ...(changes.allowedRouteIds !== undefined && {
          allowed_route_ids: allowedListColumn(changes.allowedRouteIds),
        }),
        ...(changes.allowedOrigins !== undefined && {
          allowed_origins: allowedListColumn(changes.allowedOrigins),
        }),
        ...(changes.allowedAddresses !== undefined && {
          allowed_addresses: allowedListColumn(changes.allowedAddresses),
        }),
        last_updated: now,
      })
      .where('id', '=', id)
      .returning(keyColumns)
      .executeTakeFirst();
    return row && toKeyRow(row);
  }

  /** Records a report that the key's secret leaked (its latest); the key's other state is the caller's. */
  async recordLeak(id: string, leak: KeyLeak, now: Date): Promise<void> {
    await this.db
      .updateTable('api_keys')
      .set({ leak: JSON.stringify(leak), last_updated: now })
      .where('id', '=', id)
      .execute();
  }

  /**
   * Gives the key a new secret. The current one becomes the previous secret until `previousUntil`
   * (null: refused at once); a previous secret of an earlier roll ends now. Returns false when the key
   * does not exist.
   */
  async roll(
    id: string,
    secret: { hash: Buffer; ciphertext: Buffer },
    previousUntil: Date | null,
    now: Date,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('api_keys')
      .set({
        // SET reads the row as it was: the previous secret is the current one before this update.
        previous_secret_hash: previousUntil === null ? null : sql<Uint8Array>`secret_hash`,
        previous_secret_ciphertext: previousUntil === null ? null : sql<Uint8Array>`secret_ciphertext`,
        previous_secret_expires_at: previousUntil,
        secret_hash: secret.hash,
        secret_ciphertext: secret.ciphertext,
        last_updated: now,
      })
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Returns whether a key was deleted. Its usage stays (billing data, sql/072), and whom a billing
   * export bills it to is kept in `deleted_keys`: call it in a transaction, so both or neither happen.
   */
  async delete(id: string, now = new Date()): Promise<boolean> {
    const key = await this.db
      .selectFrom('api_keys')
      .select(['external_id', 'metadata'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (key === undefined) return false;
    await this.db
      .insertInto('deleted_keys')
      .values({ id, external_id: key.external_id, metadata: key.metadata, deleted_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    const result = await this.db.deleteFrom('api_keys').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /** Binds a plan; returns the new `lastUpdated`, or undefined when the key does not exist. */
  async bindPlan(id: string, rateLimitId: string, now: Date): Promise<Date | undefined> {
    const result = await this.db
      .updateTable('api_keys')
      .set({ rate_limit_id: rateLimitId, last_updated: now })
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n ? now : undefined;
  }

  /**
   * Unbinds the key's plan. `unbound`: a plan was bound (`lastUpdated` moves); `none`: none was;
   * `missing`: no such key.
   */
  async unbindPlan(id: string, now: Date): Promise<'unbound' | 'none' | 'missing'> {
    const result = await this.db
      .updateTable('api_keys')
      .set({ rate_limit_id: null, last_updated: now })
      .where('id', '=', id)
      .where('rate_limit_id', 'is not', null)
      .executeTakeFirst();
    if (result.numUpdatedRows > 0n) return 'unbound';
    const exists = await this.db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst();
    return exists ? 'none' : 'missing';
  }

  /** Moves each key's `lastUsedAt` forward to the time given (never back): replicas write in any order. */
  async markUsed(lastUse: ReadonlyMap<string, number>): Promise<void> {
    if (lastUse.size === 0) return;
    const lastUsedAt = sql.ref<Date | null>('api_keys.last_used_at');
    await sql`
      update api_keys set last_used_at = ${this.dialect.later(lastUsedAt, sql.ref('u.t'))}
      from ${this.dialect.timesById('u', [...lastUse.keys()], [...lastUse.values()])}
      where api_keys.id = u.id`.execute(this.db);
  }

  /** Keys that expire after `from` and no later than `to`, soonest first (their expiry notices). */
  async expiringBetween(from: Date, to: Date): Promise<KeyRow[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .select(keyColumns)
      .where('expires_at', '>', from)
      .where('expires_at', '<=', to)
      .orderBy('expires_at')
      .execute();
    return rows.map(toKeyRow);
  }

  /** The newest key's sealed secret: start-up checks that the configured keys open it. */
  async newestCiphertext(): Promise<Uint8Array | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .select('secret_ciphertext')
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row?.secret_ciphertext;
  }

  /**
   * Every key's sealed secrets, for re-encryption under a new key: its secret under its id, a rolled
   * key's previous secret under its id and PREVIOUS_SECRET.
   */
  async allCiphertexts(): Promise<{ id: string; secretCiphertext: Uint8Array }[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .select(['id', 'secret_ciphertext as secretCiphertext', 'previous_secret_ciphertext as previous'])
      .execute();
    return rows.flatMap(({ id, secretCiphertext, previous }) => [
      { id, secretCiphertext },
      ...(previous === null ? [] : [{ id: id + PREVIOUS_SECRET, secretCiphertext: previous }]),
    ]);
  }

  async updateCiphertext(id: string, secretCiphertext: Buffer): Promise<void> {
    const previous = id.endsWith(PREVIOUS_SECRET);
    await this.db
      .updateTable('api_keys')
      .set(
        previous ? { previous_secret_ciphertext: secretCiphertext } : { secret_ciphertext: secretCiphertext },
      )
      .where('id', '=', previous ? id.slice(0, -PREVIOUS_SECRET.length) : id)
      .execute();
  }
}

/** Names a key's previous secret among those `allCiphertexts` gives (a key id holds no `#`). */
const PREVIOUS_SECRET = '#previous';
