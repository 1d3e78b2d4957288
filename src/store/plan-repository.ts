import { sql } from 'kysely';
import type { Db } from './db.js';
import type { ListPosition } from './key-repository.js';
import type { Period } from '../limits/window.js';

export interface PlanRow {
  readonly rateLimitId: string;
  readonly description: string;
  readonly limit: number;
  readonly period: Period;
  readonly createdAt: Date;
  readonly lastUpdated: Date;
}

/** A plan as the management API shows it: with the number of keys bound to it. */
export interface PlanWithKeys extends PlanRow {
  readonly keyCount: number;
}

/** What a PATCH may change. */
export interface PlanChanges {
  readonly description?: string;
  readonly limit?: number;
  readonly period?: Period;
}

const planColumns = [
  'p.rate_limit_id as rateLimitId',
  'p.description as description',
  'p.limit as limit',
  'p.period as period',
  'p.created_at as createdAt',
  'p.last_updated as lastUpdated',
] as const;

const keyCount = sql<number>`(select count(*) from api_keys k where k.rate_limit_id = p.rate_limit_id)`.as('keyCount');

function toPlan<T extends { limit: string | number; period: string; keyCount?: string | number }>(row: T) {
  return { ...row, limit: Number(row.limit), period: row.period as Period, keyCount: Number(row.keyCount ?? 0) };
}

export class PlanRepository {
  constructor(private readonly db: Db) {}

  /** Returns false when a plan with that id already exists. */
  async insert(plan: Omit<PlanRow, 'lastUpdated'>): Promise<boolean> {
    const result = await this.db
      .insertInto('rate_limit_plans')
      .values({
        rate_limit_id: plan.rateLimitId,
        description: plan.description,
        limit: plan.limit,
        period: plan.period,
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
    if (forUpdate) query = query.forUpdate();
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
  async update(rateLimitId: string, changes: PlanChanges, now: Date): Promise<PlanWithKeys | undefined> {
    const updated = await this.db
      .updateTable('rate_limit_plans')
      .set({ ...changes, last_updated: now })
      .where('rate_limit_id', '=', rateLimitId)
      .executeTakeFirst();
    return updated.numUpdatedRows > 0n ? this.get(rateLimitId) : undefined;
  }

  /**
   * Deletes a plan; run it in a transaction that has locked the plan row (`get(id, true)`), so a
   * binding made meanwhile waits and then finds no plan. Keys bound to it are unbound first, moving
   * their `lastUpdated`; returns how many.
   */
  async delete(rateLimitId: string, now: Date): Promise<number> {
    const unbound = await this.db
      .updateTable('api_keys')
      .set({ rate_limit_id: null, last_updated: now })
      .where('rate_limit_id', '=', rateLimitId)
      .executeTakeFirst();
    await this.db.deleteFrom('rate_limit_plans').where('rate_limit_id', '=', rateLimitId).execute();
    return Number(unbound.numUpdatedRows);
  }
}
