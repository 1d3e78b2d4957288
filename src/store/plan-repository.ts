import { sql } from 'kysely';
import type { Db } from './db.js';
import { dialectOf, lockingRows, type Dialect } from './dialect.js';
import type { KeyRow, ListPosition } from './key-repository.js';
import { isSeedLimit, ruleOf, type LimitRule } from '../limits/plan.js';
import type { Period } from '../limits/window.js';

export interface PlanRow {
  readonly rateLimitId: string;
  readonly description: string;
  /** One to four; the first is what the seed's `limit` and `period` show. */
  readonly limits: readonly LimitRule[];
  readonly createdAt: Date;
  readonly lastUpdated: Date;
}

/** A plan as the management API shows it: with the number of keys bound to it. */
export interface PlanWithKeys extends PlanRow {
  readonly keyCount: number;
}

/** A key a plan's deletion unbound, as it now is: what its audit entry shows. */
export type UnboundKey = Pick<KeyRow, 'id' | 'name' | 'enabled' | 'expiresAt' | 'externalId' | 'metadata' | 'rateLimitId'>;

/** What a PATCH may change. */
export interface PlanChanges {
  readonly description?: string;
  readonly limits?: readonly LimitRule[];
}

const planColumns = [
  'p.rate_limit_id as rateLimitId',
  'p.description as description',
  'p.limit as limit',
  'p.period as period',
  'p.limits as limits',
  'p.created_at as createdAt',
  'p.last_updated as lastUpdated',
] as const;

const keyCount = sql<number>`(select count(*) from api_keys k where k.rate_limit_id = p.rate_limit_id)`.as('keyCount');

/** A plan's stored columns as its limits: the JSON when there is one, else the seed's one limit. */
export function limitsOf(row: { limit: string | number; period: string; limits: string | null }): LimitRule[] {
  if (row.limits !== null) return JSON.parse(row.limits) as LimitRule[];
  return [ruleOf({ limit: Number(row.limit), period: row.period as Period })];
}

/** The columns that store `limits` (see sql/013). */
function limitColumns(limits: readonly LimitRule[]) {
  return { limit: limits[0]!.limit, period: limits[0]!.period, limits: isSeedLimit(limits) ? null : JSON.stringify(limits) };
}

function toPlan<T extends { limit: string | number; period: string; limits: string | null; keyCount?: string | number }>(row: T) {
  const { limit: _limit, period: _period, limits: _limits, ...rest } = row;
  return { ...rest, limits: limitsOf(row), keyCount: Number(row.keyCount ?? 0) };
}

export class PlanRepository {
  private readonly dialect: Dialect;

  constructor(private readonly db: Db) {
    this.dialect = dialectOf(db);
  }

  /** Returns false when a plan with that id already exists. */
  async insert(plan: Omit<PlanRow, 'lastUpdated'>): Promise<boolean> {
    const result = await this.db
      .insertInto('rate_limit_plans')
      .values({
        rate_limit_id: plan.rateLimitId,
        description: plan.description,
        ...limitColumns(plan.limits),
        created_at: plan.createdAt,
        last_updated: plan.createdAt,
      })
      .onConflict((oc) => oc.column('rate_limit_id').doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  /** `forUpdate`: inside a transaction, hold the row until it ends (the state before a change). */
  async get(rateLimitId: string, forUpdate = false): Promise<PlanWithKeys | undefined> {
    let query = this.db.selectFrom('rate_limit_plans as p').select([...planColumns, keyCount]).where('p.rate_limit_id', '=', rateLimitId);
    if (forUpdate) query = lockingRows(this.dialect, query, 'update');
    const row = await query.executeTakeFirst();
    return row && toPlan(row);
  }

  /** Oldest first by creation time, then id; `after` is the last plan of the previous page. */
  async list(after: ListPosition | undefined, limit: number): Promise<PlanWithKeys[]> {
    let query = this.db.selectFrom('rate_limit_plans as p').select([...planColumns, keyCount]);
    if (after !== undefined) {
      query = query.where(sql<boolean>`(p.created_at, p.rate_limit_id) > (${new Date(after.at)}, ${after.id})`);
    }
    const rows = await query.orderBy('p.created_at').orderBy('p.rate_limit_id').limit(limit).execute();
    return rows.map(toPlan);
  }

  /** Returns the plan as it now is, or undefined when it does not exist. */
  async update(rateLimitId: string, { description, limits }: PlanChanges, now: Date): Promise<PlanWithKeys | undefined> {
    const updated = await this.db
      .updateTable('rate_limit_plans')
      .set({ ...(description !== undefined && { description }), ...(limits !== undefined && limitColumns(limits)), last_updated: now })
      .where('rate_limit_id', '=', rateLimitId)
      .executeTakeFirst();
    return updated.numUpdatedRows > 0n ? this.get(rateLimitId) : undefined;
  }

  /**
   * Deletes a plan; run it in a transaction that has locked the plan row (`get(id, true)`), so a
   * binding made meanwhile waits and then finds no plan. Keys bound to it are unbound first, moving
   * their `lastUpdated`; returns them as they now are (for the audit log).
   */
  async delete(rateLimitId: string, now: Date): Promise<UnboundKey[]> {
    const unbound = await this.db
      .updateTable('api_keys')
      .set({ rate_limit_id: null, last_updated: now })
      .where('rate_limit_id', '=', rateLimitId)
      .returning(['id', 'name', 'enabled', 'expires_at as expiresAt', 'external_id as externalId', 'metadata', 'rate_limit_id as rateLimitId'])
      .execute();
    await this.db.deleteFrom('rate_limit_plans').where('rate_limit_id', '=', rateLimitId).execute();
    return unbound;
  }
}
