-- Usage over time (contract section 8): per key by minute, hour, day and month, and per endpoint and
-- per customer by day and month. Written with each usage batch, in its transaction, so a batch is
-- in the buckets exactly when it is in the totals.

CREATE TABLE usage_buckets (
  key_id            text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  granularity       text NOT NULL CHECK (granularity IN ('minute', 'hour', 'day', 'month')),
  start             timestamptz NOT NULL,
  requests          bigint NOT NULL DEFAULT 0,
  successful        bigint NOT NULL DEFAULT 0,
  failed            bigint NOT NULL DEFAULT 0,
  -- The limiter's 429s: part of failed.
  rate_limited      bigint NOT NULL DEFAULT 0,
  total_duration_ms double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, granularity, start)
);
-- The fleet's traffic (all keys) and retention both read by granularity and time.
CREATE INDEX usage_buckets_granularity_start ON usage_buckets (granularity, start);

CREATE TABLE usage_endpoint_buckets (
  key_id            text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  granularity       text NOT NULL CHECK (granularity IN ('day', 'month')),
  start             timestamptz NOT NULL,
  endpoint          text NOT NULL,
  requests          bigint NOT NULL DEFAULT 0,
  successful        bigint NOT NULL DEFAULT 0,
  failed            bigint NOT NULL DEFAULT 0,
  total_duration_ms double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, granularity, start, endpoint)
);
CREATE INDEX usage_endpoint_buckets_granularity_start ON usage_endpoint_buckets (granularity, start);

CREATE TABLE usage_customer_buckets (
  key_id            text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  granularity       text NOT NULL CHECK (granularity IN ('day', 'month')),
  start             timestamptz NOT NULL,
  customer_id       text NOT NULL,
  requests          bigint NOT NULL DEFAULT 0,
  successful        bigint NOT NULL DEFAULT 0,
  failed            bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, granularity, start, customer_id)
);
CREATE INDEX usage_customer_buckets_granularity_start ON usage_customer_buckets (granularity, start);
