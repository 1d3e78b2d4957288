-- sql/060 for the embedded store: plan costs, and the routes a key is allowed on (contract 14, 15).
ALTER TABLE rate_limit_plans ADD COLUMN costs text;
ALTER TABLE api_keys ADD COLUMN allowed_route_ids text;
