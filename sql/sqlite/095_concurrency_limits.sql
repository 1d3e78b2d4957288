-- sql/095 for the embedded store. Concurrency limits (docs/guides/plans.md, docs/decisions/0096): their refusals (429
-- concurrency_limit_exceeded) are counted in usage under an outcome of their own.
ALTER TABLE usage_buckets ADD COLUMN concurrency_limited bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_endpoint_buckets ADD COLUMN concurrency_limited bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_customer_buckets ADD COLUMN concurrency_limited bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_route_buckets ADD COLUMN concurrency_limited bigint NOT NULL DEFAULT 0;
