-- Plans with several limits (contract section 7). limits holds the plan's limits as a JSON array of
-- {name, limit, period, algorithm}; it stays null for a plan of the seed's shape (one fixed limit
-- named after its period), which "limit" and period describe alone. "limit" and period always hold
-- the first limit, so a replica of the previous version reads every plan's first limit during a
-- rolling upgrade, and a seed-shaped plan it creates or changes stays whole.
ALTER TABLE rate_limit_plans ADD COLUMN limits text;
ALTER TABLE rate_limit_plans DROP CONSTRAINT rate_limit_plans_period_check;
ALTER TABLE rate_limit_plans ADD CONSTRAINT rate_limit_plans_period_check
  CHECK (period IN ('second', 'minute', 'hour', 'day', 'week', 'month', 'year'));
