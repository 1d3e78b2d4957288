-- Request facts (decision record 0026, contract sections 13, 14 and 20): every usage row is filed
-- under the consumer its key belonged to when the requests were made ('' for none: a primary key
-- column cannot be null, and consumer ids are never empty), so a key's rows split by consumer and
-- its own reads sum across them. Totals and buckets count the units charged (cost); buckets count
-- what the clients got by status class, why requests failed (outcomes; rate_limited is the first)
-- and their response times as a latency histogram: a JSON object of bin -> requests, merged bin by
-- bin when a batch adds to a row (src/usage/latency-histogram.ts). Rows written before keep 0 and '{}'.
--
-- The primary keys gain consumer_id last, so a key's reads still use them whole; a consumer's reads
-- use the partial indexes below. Rebuilding a primary key reads its table once, under lock.

ALTER TABLE usage_endpoints
  ADD COLUMN consumer_id text NOT NULL DEFAULT '',
  ADD COLUMN cost bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_endpoints DROP CONSTRAINT usage_endpoints_pkey, ADD PRIMARY KEY (key_id, endpoint, consumer_id);
CREATE INDEX usage_endpoints_consumer ON usage_endpoints (consumer_id) WHERE consumer_id <> '';

ALTER TABLE usage_customers ADD COLUMN consumer_id text NOT NULL DEFAULT '';
ALTER TABLE usage_customers DROP CONSTRAINT usage_customers_pkey, ADD PRIMARY KEY (key_id, customer_id, consumer_id);
CREATE INDEX usage_customers_consumer ON usage_customers (consumer_id) WHERE consumer_id <> '';

ALTER TABLE usage_buckets
  ADD COLUMN consumer_id text NOT NULL DEFAULT '',
  ADD COLUMN cost bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_2xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_3xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_4xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_5xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN credits_exhausted bigint NOT NULL DEFAULT 0,
  ADD COLUMN disabled bigint NOT NULL DEFAULT 0,
  ADD COLUMN expired bigint NOT NULL DEFAULT 0,
  ADD COLUMN route_not_allowed bigint NOT NULL DEFAULT 0,
  ADD COLUMN backend_error bigint NOT NULL DEFAULT 0,
  ADD COLUMN backend_unreachable bigint NOT NULL DEFAULT 0,
  ADD COLUMN latency text NOT NULL DEFAULT '{}';
ALTER TABLE usage_buckets DROP CONSTRAINT usage_buckets_pkey, ADD PRIMARY KEY (key_id, granularity, start, consumer_id);
CREATE INDEX usage_buckets_consumer ON usage_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';

ALTER TABLE usage_endpoint_buckets
  ADD COLUMN consumer_id text NOT NULL DEFAULT '',
  ADD COLUMN cost bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_2xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_3xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_4xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_5xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN credits_exhausted bigint NOT NULL DEFAULT 0,
  ADD COLUMN disabled bigint NOT NULL DEFAULT 0,
  ADD COLUMN expired bigint NOT NULL DEFAULT 0,
  ADD COLUMN route_not_allowed bigint NOT NULL DEFAULT 0,
  ADD COLUMN backend_error bigint NOT NULL DEFAULT 0,
  ADD COLUMN backend_unreachable bigint NOT NULL DEFAULT 0,
  ADD COLUMN latency text NOT NULL DEFAULT '{}';
ALTER TABLE usage_endpoint_buckets DROP CONSTRAINT usage_endpoint_buckets_pkey, ADD PRIMARY KEY (key_id, granularity, start, endpoint, consumer_id);
CREATE INDEX usage_endpoint_buckets_consumer ON usage_endpoint_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';

ALTER TABLE usage_customer_buckets
  ADD COLUMN consumer_id text NOT NULL DEFAULT '',
  ADD COLUMN cost bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_2xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_3xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_4xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN status_5xx bigint NOT NULL DEFAULT 0,
  ADD COLUMN credits_exhausted bigint NOT NULL DEFAULT 0,
  ADD COLUMN disabled bigint NOT NULL DEFAULT 0,
  ADD COLUMN expired bigint NOT NULL DEFAULT 0,
  ADD COLUMN route_not_allowed bigint NOT NULL DEFAULT 0,
  ADD COLUMN backend_error bigint NOT NULL DEFAULT 0,
  ADD COLUMN backend_unreachable bigint NOT NULL DEFAULT 0,
  ADD COLUMN latency text NOT NULL DEFAULT '{}';
ALTER TABLE usage_customer_buckets DROP CONSTRAINT usage_customer_buckets_pkey, ADD PRIMARY KEY (key_id, granularity, start, customer_id, consumer_id);
CREATE INDEX usage_customer_buckets_consumer ON usage_customer_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';
