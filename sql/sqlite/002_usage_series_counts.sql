-- sql/014 for the embedded store: every bucket of an endpoint or customer series has the shape of
-- the key's buckets (contract section 8), rate-limited requests (part of failed) for both and the
-- summed response time for customers. Rows written before keep 0.

ALTER TABLE usage_endpoint_buckets ADD COLUMN rate_limited bigint NOT NULL DEFAULT 0;

ALTER TABLE usage_customer_buckets ADD COLUMN rate_limited bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_customer_buckets ADD COLUMN total_duration_ms double precision NOT NULL DEFAULT 0;
