-- Every bucket of an endpoint or customer series has the shape of the key's buckets (contract section
-- 8): rate-limited requests (part of failed) for both, and the summed response time for customers.
-- Series rows written before this migration did not count them: they keep 0.

ALTER TABLE usage_endpoint_buckets ADD COLUMN rate_limited bigint NOT NULL DEFAULT 0;

ALTER TABLE usage_customer_buckets
  ADD COLUMN rate_limited bigint NOT NULL DEFAULT 0,
  ADD COLUMN total_duration_ms double precision NOT NULL DEFAULT 0;
