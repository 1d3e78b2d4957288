-- sql/140 for the embedded store: what a plan's limits, balances and usage count; null: requests.
ALTER TABLE rate_limit_plans ADD COLUMN unit text;
