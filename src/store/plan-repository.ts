import { sql } from 'kysely';
import type { Db } from './db.js';
import type { ConsumerRow } from './consumer-repository.js';
import { keyAuditColumns, withAllowedRoutes, type KeyAuditRow } from './key-row.js';
import type { ListPosition } from './list-position.js';
import type { CostRule, LimitRule } from '../plans/plan.js';
import { PLAN_UNIT_DEFAULT } from '../plans/usage-pricing.js';
import { costsColumn, costsOf, limitColumns, limitsOf } from './plan-columns.js';
import { sqlDialectOf, type SqlDialect } from './sql-dialect.js';

export interface PlanRow {
  readonly rateLimitId: string;
  readonly description: string;
  /** One to four; the first is what the seed's `limit` and `period` show. */
  readonly limits: readonly LimitRule[];
  /** The first a request matches gives its cost; none: every request costs 1. */
  readonly costs: readonly CostRule[];
  /** What its limits, balances and usage count (`requests` unless the plan says). */
  readonly unit: string;
  readonly createdAt: Date;
  readonly lastUpdated: Date;
}

/** A plan as the management API shows it: with the number of keys and of consumers bound to it. */
export interface PlanWithKeys extends PlanRow {
  readonly keyCount: number;
  readonly consumerCount: number;
}

/** A consumer a plan's deletion unbound, as it now is: what its audit entry shows. */
export type UnboundConsumer = Pick<ConsumerRow, 'id' | 'name' | 'externalId' | 'metadata' | 'rateLimitId'>;

/** What a plan's deletion unbound: each as it now is. */
export interface Unbound {
  readonly keys: KeyAuditRow[];
  readonly consumers: UnboundConsumer[];
}

/** What a PATCH may change. */
export interface PlanChanges {
  readonly description?: string;
  readonly limits?: readonly LimitRule[];
  readonly costs?: readonly CostRule[];
  readonly unit?: string;
}

const planColumns = [
  'p.rate_limit_id as rateLimitId',
  'p.description as description',
  'p.limit as limit',
  'p.period as period',
  'p.limits as limits',
  'p.costs as costs',
  'p.unit as unit',
  'p.created_at as createdAt',
  'p.last_updated as lastUpdated',
] as const;

const keyCount = sql<number>`(select count(*) from api_keys k where k.rate_limit_id = p.rate_limit_id)`.as(
  'keyCount',
);
const consumerCount =
  sql<number>`(select count(*) from consumers c where c.rate_limit_id = p.rate_limit_id)`.as('consumerCount');

function toPlan<
  T extends {
    limit: string | number;
    period: string;
    limits: string | null;
    costs: string | null;
    unit: string | null;
    keyCount: string | number;
    consumerCount: string | number;
  },
>(row: T) {
  const { limit: _limit, period: _period, limits: _limits, costs, ...rest } = row;
  return {
    ...rest,
    limits: limitsOf(row),
    costs: costsOf(costs),
    unit: row.unit ?? PLAN_UNIT_DEFAULT,
    keyCount: Number(row.keyCount),
    consumerCount: Number(row.consumerCount),
  };
}

/** The default unit is stored as null, so plans from before units and plans that never set one read alike. */
const unitColumn = (unit: string | undefined): string | null =>
  unit === undefined || unit === PLAN_UNIT_DEFAULT ? null : unit;

export class PlanRepository {
  private readonly dialect: SqlDialect;

  constructor(private readonly db: Db) {
    this.dialect = sqlDialectOf(db);
  }

  /** Returns false when a plan with that id already exists; costs left out: none; unit: requests. */
  async insert(
    plan: Omit<PlanRow, 'lastUpdated' | 'costs' | 'unit'> & Partial<Pick<PlanRow, 'costs' | 'unit'>>,
  ): Promise<boolean> {
    const result = await this.db
      .insertInto('rate_limit_plans')
      .values({
        rate_limit_id: plan.rateLimitId,
        description: plan.description,
        ...limitColumns(plan.limits),
        costs: costsColumn(plan.costs ?? []),
        unit: unitColumn(plan.unit),
        created_at: plan.createdAt,
        last_updated: plan.createdAt,
      })
      .onConflict((oc) => oc.column('rate_limit_id').doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  /** `forUpdate`: inside a transaction, hold the row until it ends (the state before a change). */
  async get(rateLimitId: string, forUpdate = false): Promise<PlanWithKeys | undefined> {
    let query = this.db
      .selectFrom('rate_limit_plans as p')
      .select([...planColumns, keyCount, consumerCount])
      .where('p.rate_limit_id', '=', rateLimitId);
    if (forUpdate) query = this.dialect.lockRows(query, 'update');
    const row = await query.executeTakeFirst();
    return row && toPlan(row);
  }

  /** Oldest first by creation time, then id; `after` is the last plan of the previous page. */
  async list(after: ListPosition | undefined, limit: number): Promise<PlanWithKeys[]> {
    let query = this.db.selectFrom('rate_limit_plans as p').select([...planColumns, keyCount, consumerCount]);
    if (after !== undefined) {
      query = query.where(
        sql<boolean>`(p.created_at, p.rate_limit_id) > (${new Date(after.at)}, ${after.id})`,
      );
    }
    const rows = await query.orderBy('p.created_at').orderBy('p.rate_limit_id').limit(limit).execute();
    return rows.map(toPlan);
  }

  /** Returns the plan as it now is, or undefined when it does not exist. */
  async update(
    rateLimitId: string,
    { description, limits, costs, unit }: PlanChanges,
    now: Date,
  ): Promise<PlanWithKeys | undefined> {
    const updated = await this.db
      .updateTable('rate_limit_plans')
      .set({
        ...(description !== undefined && { description }),
        ...(limits !== undefined && limitColumns(limits)),
        ...(costs !== undefined && { costs: costsColumn(costs) }),
        ...(unit !== undefined && { unit: unitColumn(unit) }),
        last_updated: now,
      })
      .where('rate_limit_id', '=', rateLimitId)
      .executeTakeFirst();
    return updated.numUpdatedRows > 0n ? this.get(rateLimitId) : undefined;
  }

  /**
   * Deletes a plan; run it in a transaction that has locked the plan row (`get(id, true)`), so a
   * binding made meanwhile waits and then finds no plan. Keys and consumers bound to it are unbound
   * first, moving their `lastUpdated`; returns them as they now are (for the audit log).
   */
  async delete(rateLimitId: string, now: Date): Promise<Unbound> {
    const keys = await this.db
      .updateTable('api_keys')
      .set({ rate_limit_id: null, last_updated: now })
      .where('rate_limit_id', '=', rateLimitId)
      .returning(keyAuditColumns)
      .execute()
      .then((rows) => rows.map(withAllowedRoutes));
    const consumers = await this.db
      .updateTable('consumers')
      .set({ rate_limit_id: null, last_updated: now })
      .where('rate_limit_id', '=', rateLimitId)
      .returning(['id', 'name', 'external_id as externalId', 'metadata', 'rate_limit_id as rateLimitId'])
      .execute();
    await this.db.deleteFrom('rate_limit_plans').where('rate_limit_id', '=', rateLimitId).execute();
    return { keys, consumers };
  }
}
