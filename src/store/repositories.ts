import { sql } from 'kysely';
import type { Db } from './db.js';
import type { Period } from '../limits/window.js';

export interface PlanRow {
  readonly rateLimitId: string;
  readonly description: string;
  readonly limit: number;
  readonly period: Period;
  readonly createdAt: Date;
}

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
}

/** What the proxy needs to admit a request: the key and its plan, in one indexed query. */
export interface KeyWithPlan {
  readonly id: string;
  readonly rateLimitId: string | null;
  readonly limit: number | null;
  readonly period: Period | null;
}

const keyColumns = [
  'seq',
  'id',
  'name',
  'secret_ciphertext as secretCiphertext',
  'rate_limit_id as rateLimitId',
  'created_at as createdAt',
  'last_updated as lastUpdated',
] as const;

function toKeyRow(row: { seq: string | number } & Omit<KeyRow, 'seq'>): KeyRow {
  return { ...row, seq: Number(row.seq) };
}

export class KeyRepository {
  constructor(private readonly db: Db) {}

  async insert(key: {
    id: string;
    name: string;
    secretHash: Buffer;
    secretCiphertext: Buffer;
    createdAt: Date;
  }): Promise<void> {
    await this.db
      .insertInto('api_keys')
      .values({
        id: key.id,
        name: key.name,
        secret_hash: key.secretHash,
        secret_ciphertext: key.secretCiphertext,
        rate_limit_id: null,
        created_at: key.createdAt,
        last_updated: key.createdAt,
      })
      .execute();
  }

  /** Oldest first by creation time, then id; `after` is the last key of the previous page. */
  async list(after: ListPosition | undefined, limit: number): Promise<KeyRow[]> {
    let query = this.db.selectFrom('api_keys').select(keyColumns);
    if (after !== undefined) query = query.where(sql<boolean>`(created_at, id) > (${new Date(after.at)}, ${after.id})`);
    const rows = await query.orderBy('created_at').orderBy('id').limit(limit).execute();
    return rows.map(toKeyRow);
  }

  async get(id: string): Promise<KeyRow | undefined> {
    const row = await this.db.selectFrom('api_keys').select(keyColumns).where('id', '=', id).executeTakeFirst();
    return row && toKeyRow(row);
  }

  async findBySecretHash(secretHash: Buffer): Promise<KeyWithPlan | undefined> {
    const row = await this.db
      .selectFrom('api_keys as k')
      .leftJoin('rate_limit_plans as p', 'p.rate_limit_id', 'k.rate_limit_id')
      .select(['k.id as id', 'k.rate_limit_id as rateLimitId', 'p.limit as limit', 'p.period as period'])
      .where('k.secret_hash', '=', secretHash)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      id: row.id,
      rateLimitId: row.rateLimitId,
      limit: row.limit === null ? null : Number(row.limit),
      period: row.period as Period | null,
    };
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

export class PlanRepository {
  constructor(private readonly db: Db) {}

  /** Returns false when a plan with that id already exists. */
  async insert(plan: PlanRow): Promise<boolean> {
    const result = await this.db
      .insertInto('rate_limit_plans')
      .values({
        rate_limit_id: plan.rateLimitId,
        description: plan.description,
        limit: plan.limit,
        period: plan.period,
        created_at: plan.createdAt,
      })
      .onConflict((oc) => oc.column('rate_limit_id').doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  async get(rateLimitId: string): Promise<PlanRow | undefined> {
    const row = await this.db
      .selectFrom('rate_limit_plans')
      .select(['rate_limit_id', 'description', 'limit', 'period', 'created_at'])
      .where('rate_limit_id', '=', rateLimitId)
      .executeTakeFirst();
    return (
      row && {
        rateLimitId: row.rate_limit_id,
        description: row.description,
        limit: Number(row.limit),
        period: row.period as Period,
        createdAt: row.created_at,
      }
    );
  }
}
