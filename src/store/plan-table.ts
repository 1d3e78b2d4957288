import type { ColumnType } from 'kysely';

/** The table of rate limit plans (sql/001, sql/013, sql/060, sql/140), as the repositories use it. */
export interface RateLimitPlanTable {
  rate_limit_id: string;
  description: string;
  limit: ColumnType<string, number, number>;
  period: string;
  /** The limits as JSON, or null for one fixed limit named after its period (sql/013). */
  limits: string | null;
  /** The costs as JSON, or null: every request costs 1 (sql/060). */
  costs: ColumnType<string | null, string | null | undefined, string | null>;
  /** What the plan counts, or null: requests (sql/140). */
  unit: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: ColumnType<Date, Date | undefined, never>;
  last_updated: ColumnType<Date, Date, Date>;
}
