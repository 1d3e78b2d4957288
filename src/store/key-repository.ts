import { sql } from 'kysely';
import type { Db } from './db.js';
import type { Balance } from '../plans/balance.js';
import type { CostRule, LimitRule } from '../plans/plan.js';
import { creditColumns, creditsOfRow } from './credit-columns.js';
import { afterPosition, orderBy, sortValue, type KeyOrder, type KeyPosition } from './key-list-order.js';
import { costsOf, limitsOf } from './plan-columns.js';
import { sqlDialectOf, type SqlDialect } from './sql-dialect.js';

export interface KeyRow {
  readonly seq: number;
  readonly id: string;
  readonly name: string;
  readonly secretCiphertext: Uint8Array;
  readonly rateLimitId: string | null;
  readonly createdAt: Date;
  readonly lastUpdated: Date;
  readonly enabled: boolean;
  readonly expiresAt: Date | null;
  readonly externalId: string | null;
  /** The caller's JSON object as serialised. */
  readonly metadata: string;
  readonly lastUsedAt: Date | null;
  /** The consumer the key belongs to, or null. */
  readonly consumerId: string | null;
  /** The routes the key may take; null: every route. */
  readonly allowedRouteIds: readonly string[] | null;
  /** The origins it may be used from (src/plans/origins.ts); null: any. */
  readonly allowedOrigins: readonly string[] | null;
  /** The client addresses and CIDR blocks it may be used from; null: any. */
  readonly allowedAddresses: readonly string[] | null;
  /** Its prepaid credits; null: none. */
  readonly balance: Balance | null;
  /** Bumped by every set of its balance, kept when it holds none (src/plans/balance.ts). */
  readonly creditsEpoch: number;
  /** After a roll: when its previous secret stops (or stopped) working; null: no previous secret. */
  readonly previousSecretExpiresAt: Date | null;
}

/** The fields an administrator sets on a key (create and PATCH). */
export interface KeySettings {
  readonly name: string;
  readonly enabled: boolean;
  readonly expiresAt: Date | null;
  readonly externalId: string | null;
  /** A JSON object as serialised. */
  readonly metadata: string;
  readonly consumerId: string | null;
  readonly allowedRouteIds: readonly string[] | null;
  readonly allowedOrigins: readonly string[] | null;
  readonly allowedAddresses: readonly string[] | null;
}

/** A key as its audit entries show it: what a change that touches many keys at once returns of each. */
export type KeyAuditRow = Pick<
  KeyRow,
  | 'id'
  | 'name'
  | 'enabled'
  | 'expiresAt'
  | 'externalId'
  | 'metadata'
  | 'rateLimitId'
  | 'consumerId'
  | 'allowedRouteIds'
  | 'allowedOrigins'
  | 'allowedAddresses'
>;

/** The columns of a KeyAuditRow, for the `returning` of an update of many keys (read through `withAllowedRoutes`). */
export const keyAuditColumns = [
  'id',
  'name',
  'enabled',
  'expires_at as expiresAt',
  'external_id as externalId',
  'metadata',
  'rate_limit_id as rateLimitId',
  'consumer_id as consumerId',
  'allowed_route_ids as allowedRouteIds',
  'allowed_origins as allowedOrigins',
  'allowed_addresses as allowedAddresses',
] as const;

/**
 * A key's allowed routes (sql/060), origins or addresses (sql/082) as stored: a JSON array, or null
 * for any.
 */
export const allowedListColumn = (items: readonly string[] | null): string | null =>
  items === null ? null : JSON.stringify(items);
const allowedListOf = (column: string | null): string[] | null =>
  column === null ? null : (JSON.parse(column) as string[]);

type AllowedLists = 'allowedRouteIds' | 'allowedOrigins' | 'allowedAddresses';

/** A row read with the columns of `keyAuditColumns`, its allowed routes, origins and addresses parsed. */
export function withAllowedRoutes<T extends Record<AllowedLists, string | null>>(
  row: T,
): Omit<T, AllowedLists> & Record<AllowedLists, string[] | null> {
  return {
    ...row,
    allowedRouteIds: allowedListOf(row.allowedRouteIds),
    allowedOrigins: allowedListOf(row.allowedOrigins),
    allowedAddresses: allowedListOf(row.allowedAddresses),
  };
}

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

/** The consumer a key belongs to, with the limits of the consumer's plan. */
export interface KeyConsumer {
  readonly id: string;
  readonly rateLimitId: string | null;
  /** The consumer's plan's limits; null without a plan. */
  readonly limits: readonly LimitRule[] | null;
  /** The consumer's plan's costs; none without a plan. */
  readonly costs: readonly CostRule[];
  /** The consumer's prepaid credits; null: none. */
  readonly balance: Balance | null;
}

/**
 * What the proxy needs to admit a request presenting one secret: the key, its state, its plan, its
 * consumer and the consumer's plan, in one indexed query; and what verify answers of the key besides.
 */
export interface KeyWithPlan {
  readonly id: string;
  readonly name: string;
  readonly externalId: string | null;
  /** The caller's JSON object as serialised. */
  readonly metadata: string;
  readonly rateLimitId: string | null;
  /** The bound plan's limits; null without a plan. */
  readonly limits: readonly LimitRule[] | null;
  /** The bound plan's costs; none without a plan. */
  readonly costs: readonly CostRule[];
  readonly enabled: boolean;
  /** The key's own expiry, epoch ms; null: never. */
  readonly expiresAtMs: number | null;
  /** Set when the secret is the previous one of a roll: the end of its grace, epoch ms. */
  readonly secretValidUntilMs: number | null;
  /** The consumer the key belongs to; null: none. */
  readonly consumer: KeyConsumer | null;
  /** The routes the key may take; null: every route. */
  readonly allowedRouteIds: readonly string[] | null;
  /** The origins the key may be used from; null: any. */
  readonly allowedOrigins: readonly string[] | null;
  /** The client addresses and CIDR blocks the key may be used from; null: any. */
  readonly allowedAddresses: readonly string[] | null;
  /** The key's own prepaid credits; null: none. */
  readonly balance: Balance | null;
}

/** A key a token names, with its secrets sealed: they sign its tokens (docs/decisions/0091). */
export interface KeyForToken {
  readonly key: KeyWithPlan;
  readonly secretCiphertext: Uint8Array;
  /** A rolled key's previous secret, and the end of its grace (epoch ms); null: none. */
  readonly previous: { readonly ciphertext: Uint8Array; readonly untilMs: number } | null;
}

const keyColumns = [
  'seq',
  'id',
  'name',
  'secret_ciphertext as secretCiphertext',
  'rate_limit_id as rateLimitId',
  'created_at as createdAt',
  'last_updated as lastUpdated',
  'enabled',
  'expires_at as expiresAt',
  'external_id as externalId',
  'metadata',
  'last_used_at as lastUsedAt',
  'consumer_id as consumerId',
  'allowed_route_ids as allowedRouteIds',
  'previous_secret_expires_at as previousSecretExpiresAt',
  'allowed_origins as allowedOrigins',
  'allowed_addresses as allowedAddresses',
  ...creditColumns('api_keys', 'credits'),
] as const;

/** The limits of a plan read through a left join: null when no plan matched. */
function joinedLimits(
  limit: string | number | null,
  period: string | null,
  limits: string | null,
): LimitRule[] | null {
  return limit === null || period === null ? null : limitsOf({ limit, period, limits });
}

function toKeyRow(
  row: { seq: string | number } & Record<AllowedLists, string | null> &
    Omit<KeyRow, 'seq' | AllowedLists | 'balance' | 'creditsEpoch'>,
): KeyRow {
  const { balance, epoch } = creditsOfRow(row, 'credits');
  const allowed = withAllowedRoutes(row);
  return {
    id: row.id,
    name: row.name,
    secretCiphertext: row.secretCiphertext,
    rateLimitId: row.rateLimitId,
    createdAt: row.createdAt,
    lastUpdated: row.lastUpdated,
    enabled: row.enabled,
    expiresAt: row.expiresAt,
    externalId: row.externalId,
    metadata: row.metadata,
    lastUsedAt: row.lastUsedAt,
    consumerId: row.consumerId,
    allowedRouteIds: allowed.allowedRouteIds,
    allowedOrigins: allowed.allowedOrigins,
    allowedAddresses: allowed.allowedAddresses,
    seq: Number(row.seq),
    balance,
    creditsEpoch: epoch,
    previousSecretExpiresAt: row.previousSecretExpiresAt,
  };
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
    const row = await this.withPlans()
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
    const row = await this.withPlans()
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

  /** A key joined with its plan, its consumer and the consumer's plan: what the key cache builds a key of. */
  private withPlans() {
    return this.db
      .selectFrom('api_keys as k')
      .leftJoin('rate_limit_plans as p', 'p.rate_limit_id', 'k.rate_limit_id')
      .leftJoin('consumers as c', 'c.id', 'k.consumer_id')
      .leftJoin('rate_limit_plans as cp', 'cp.rate_limit_id', 'c.rate_limit_id')
      .select([
        'k.id as id',
        'k.name as name',
        'k.external_id as externalId',
        'k.metadata as metadata',
        'k.rate_limit_id as rateLimitId',
        'p.limit as limit',
        'p.period as period',
        'p.limits as limits',
        'p.costs as costs',
        'k.enabled as enabled',
        'k.expires_at as expiresAt',
        'k.secret_hash as secretHash',
        'k.previous_secret_expires_at as previousSecretExpiresAt',
        'c.id as consumerId',
        'c.rate_limit_id as consumerRateLimitId',
        'cp.limit as consumerLimit',
        'cp.period as consumerPeriod',
        'cp.limits as consumerLimits',
        'cp.costs as consumerCosts',
        'k.allowed_route_ids as allowedRouteIds',
        'k.allowed_origins as allowedOrigins',
        'k.allowed_addresses as allowedAddresses',
        ...creditColumns('k', 'credits'),
        ...creditColumns('c', 'consumerCredits'),
      ]);
  }

  /** Changes the given settings; returns the key as it now is, or undefined when it does not exist. */
  async update(id: string, changes: Partial<KeySettings>, now: Date): Promise<KeyRow | undefined> {
    const row = await this.db
      .updateTable('api_keys')
      .set({
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.enabled !== undefined && { enabled: changes.enabled }),
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

/** A key's row joined with its plans as the key cache takes it; `secretValidUntilMs` for the secret presented. */
function keyWithPlanOf(
  row: {
    id: string;
    name: string;
    externalId: string | null;
    metadata: string;
    rateLimitId: string | null;
    limit: string | number | null;
    period: string | null;
    limits: string | null;
    costs: string | null;
    enabled: boolean;
    expiresAt: Date | null;
    consumerId: string | null;
    consumerRateLimitId: string | null;
    consumerLimit: string | number | null;
    consumerPeriod: string | null;
    consumerLimits: string | null;
    consumerCosts: string | null;
    allowedRouteIds: string | null;
    allowedOrigins: string | null;
    allowedAddresses: string | null;
  } & Parameters<typeof creditsOfRow>[0],
  secretValidUntilMs: number | null,
): KeyWithPlan {
  return {
    id: row.id,
    name: row.name,
    externalId: row.externalId,
    metadata: row.metadata,
    rateLimitId: row.rateLimitId,
    limits: joinedLimits(row.limit, row.period, row.limits),
    costs: costsOf(row.costs),
    enabled: row.enabled,
    expiresAtMs: row.expiresAt?.getTime() ?? null,
    secretValidUntilMs,
    consumer:
      row.consumerId === null
        ? null
        : {
            id: row.consumerId,
            rateLimitId: row.consumerRateLimitId,
            limits: joinedLimits(row.consumerLimit, row.consumerPeriod, row.consumerLimits),
            costs: costsOf(row.consumerCosts),
            balance: creditsOfRow(row, 'consumerCredits').balance,
          },
    allowedRouteIds: allowedListOf(row.allowedRouteIds),
    allowedOrigins: allowedListOf(row.allowedOrigins),
    allowedAddresses: allowedListOf(row.allowedAddresses),
    balance: creditsOfRow(row, 'credits').balance,
  };
}
