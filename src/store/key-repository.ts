import { sql } from 'kysely';
import type { Db } from './db.js';
import { dialectOf, lockingRows, type Dialect } from './dialect.js';
import type { LimitRule } from '../limits/plan.js';
import { limitsOf } from './plan-repository.js';

/** Where a page of a list ordered by creation time, then id, continues: after this item. */
export interface ListPosition {
  /** Creation time, epoch milliseconds. */
  readonly at: number;
  readonly id: string;
}

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
}

/** The fields an administrator sets on a key (create and PATCH). */
export interface KeySettings {
  readonly name: string;
  readonly enabled: boolean;
  readonly expiresAt: Date | null;
  readonly externalId: string | null;
  /** A JSON object as serialised. */
  readonly metadata: string;
}

/** Filters of the key list; absent fields do not filter. */
export interface KeyFilter {
  readonly rateLimitId?: string;
  readonly enabled?: boolean;
  readonly externalId?: string;
  readonly namePrefix?: string;
}

/**
 * What the proxy needs to admit a request presenting one secret: the key, its state and its plan, in
 * one indexed query.
 */
export interface KeyWithPlan {
  readonly id: string;
  readonly rateLimitId: string | null;
  /** The bound plan's limits; null without a plan. */
  readonly limits: readonly LimitRule[] | null;
  readonly enabled: boolean;
  /** The key's own expiry, epoch ms; null: never. */
  readonly expiresAtMs: number | null;
  /** Set when the secret is the previous one of a roll: the end of its grace, epoch ms. */
  readonly secretValidUntilMs: number | null;
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
] as const;

/** Where Postgres and SQLite part ways for keys: a name prefix, and moving many keys' lastUsedAt at once. */
const DIALECT_SQL = {
  postgres: {
    namePrefix: (prefix: string) => sql<boolean>`starts_with(name, ${prefix})`,
    markUsed: (ids: string[], times: number[]) => sql`
      update api_keys k set last_used_at = greatest(k.last_used_at, u.t)
      from unnest(${ids}::text[], ${times.map((t) => new Date(t).toISOString())}::timestamptz[]) as u(id, t)
      where k.id = u.id`,
  },
  sqlite: {
    namePrefix: (prefix: string) => sql<boolean>`substr(name, 1, length(${prefix})) = ${prefix}`,
    // Epoch milliseconds, as the SQLite schema stores time; max() of a null is null, hence coalesce.
    markUsed: (ids: string[], times: number[]) => sql`
      update api_keys set last_used_at = max(coalesce(last_used_at, 0), u.t)
      from (select value ->> 0 as id, value ->> 1 as t from json_each(${JSON.stringify(ids.map((id, i) => [id, times[i]]))})) as u
      where api_keys.id = u.id`,
  },
} satisfies Record<Dialect, unknown>;

function toKeyRow(row: { seq: string | number } & Omit<KeyRow, 'seq'>): KeyRow {
  return { ...row, seq: Number(row.seq) };
}

export class KeyRepository {
  private readonly dialect: Dialect;

  constructor(private readonly db: Db) {
    this.dialect = dialectOf(db);
  }

  /** Settings left out take the defaults: enabled, no expiry, no owner, `{}`, no plan. */
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
      })
      .execute();
  }

  /** Oldest first by creation time, then id; `after` is the last key of the previous page. */
  async list(filter: KeyFilter, after: ListPosition | undefined, limit: number): Promise<KeyRow[]> {
    let query = this.db.selectFrom('api_keys').select(keyColumns);
    if (after !== undefined) query = query.where(sql<boolean>`(created_at, id) > (${new Date(after.at)}, ${after.id})`);
    if (filter.rateLimitId !== undefined) query = query.where('rate_limit_id', '=', filter.rateLimitId);
    if (filter.enabled !== undefined) query = query.where('enabled', '=', filter.enabled);
    if (filter.externalId !== undefined) query = query.where('external_id', '=', filter.externalId);
    if (filter.namePrefix !== undefined) query = query.where(DIALECT_SQL[this.dialect].namePrefix(filter.namePrefix));
    const rows = await query.orderBy('created_at').orderBy('id').limit(limit).execute();
    return rows.map(toKeyRow);
  }

  /** `forUpdate`: inside a transaction, hold the row until it ends (the state before a change). */
  async get(id: string, forUpdate = false): Promise<KeyRow | undefined> {
    let query = this.db.selectFrom('api_keys').select(keyColumns).where('id', '=', id);
    if (forUpdate) query = lockingRows(this.dialect, query, 'update');
    const row = await query.executeTakeFirst();
    return row && toKeyRow(row);
  }

  /** The key a secret opens: its current secret, or the previous one of a roll (ended grace included). */
  async findBySecretHash(secretHash: Buffer): Promise<KeyWithPlan | undefined> {
    const row = await this.db
      .selectFrom('api_keys as k')
      .leftJoin('rate_limit_plans as p', 'p.rate_limit_id', 'k.rate_limit_id')
      .select([
        'k.id as id',
        'k.rate_limit_id as rateLimitId',
        'p.limit as limit',
        'p.period as period',
        'p.limits as limits',
        'k.enabled as enabled',
        'k.expires_at as expiresAt',
        'k.secret_hash as secretHash',
        'k.previous_secret_expires_at as previousSecretExpiresAt',
      ])
      .where((eb) => eb.or([eb('k.secret_hash', '=', secretHash), eb('k.previous_secret_hash', '=', secretHash)]))
      .executeTakeFirst();
    if (!row) return undefined;
    const isPrevious = !secretHash.equals(Buffer.from(row.secretHash));
    return {
      id: row.id,
      rateLimitId: row.rateLimitId,
      limits: row.limit === null || row.period === null ? null : limitsOf({ limit: row.limit, period: row.period, limits: row.limits }),
      enabled: row.enabled,
      expiresAtMs: row.expiresAt?.getTime() ?? null,
      // A previous secret without an end cannot be stored; treat one as already ended.
      secretValidUntilMs: isPrevious ? (row.previousSecretExpiresAt?.getTime() ?? 0) : null,
    };
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
  async roll(id: string, secret: { hash: Buffer; ciphertext: Buffer }, previousUntil: Date | null, now: Date): Promise<boolean> {
    const result = await this.db
      .updateTable('api_keys')
      .set({
        // SET reads the row as it was: the previous secret is the current one before this update.
        previous_secret_hash: previousUntil === null ? null : sql<Uint8Array>`secret_hash`,
        previous_secret_expires_at: previousUntil,
        secret_hash: secret.hash,
        secret_ciphertext: secret.ciphertext,
        last_updated: now,
      })
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Returns whether a key was deleted (its usage rows go with it). */
  async delete(id: string): Promise<boolean> {
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
    await DIALECT_SQL[this.dialect].markUsed([...lastUse.keys()], [...lastUse.values()]).execute(this.db);
  }

  /** The newest key's sealed secret: start-up checks that the configured keys open it. */
  async newestCiphertext(): Promise<Uint8Array | undefined> {
    const row = await this.db.selectFrom('api_keys').select('secret_ciphertext').orderBy('seq', 'desc').limit(1).executeTakeFirst();
    return row?.secret_ciphertext;
  }

  /** Every key's sealed secret, for re-encryption under a new key. */
  async allCiphertexts(): Promise<{ id: string; secretCiphertext: Uint8Array }[]> {
    return this.db.selectFrom('api_keys').select(['id', 'secret_ciphertext as secretCiphertext']).execute();
  }

  async updateCiphertext(id: string, secretCiphertext: Buffer): Promise<void> {
    await this.db.updateTable('api_keys').set({ secret_ciphertext: secretCiphertext }).where('id', '=', id).execute();
  }
}
