-- What a plan's limits, balances and usage count (docs/guides/usage-priced-apis.md), e.g. `tokens`;
-- null: requests.
ALTER TABLE rate_limit_plans ADD COLUMN unit text;
