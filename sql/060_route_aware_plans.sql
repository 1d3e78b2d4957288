-- Plans that know which route a request takes (contract sections 14 and 15). A limit's `match` rides
-- in the plan's `limits` JSON (sql/013); what a request costs is the plan's `costs`, and a key may be
-- allowed on some routes only.
-- JSON [{"match": {...}, "cost": n}]: the first that matches gives a request its cost; null: it costs 1.
ALTER TABLE rate_limit_plans ADD COLUMN costs text;
-- JSON array of route ids; null: every route, the catch-all included.
ALTER TABLE api_keys ADD COLUMN allowed_route_ids text;
