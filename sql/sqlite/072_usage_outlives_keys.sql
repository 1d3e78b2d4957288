-- sql/072 for the embedded store (docs/decisions/0064-usage-outlives-its-key.md): usage is billing data,
-- deleting a key never deletes its usage. SQLite cannot drop a constraint: each usage table is made
-- again without its reference to api_keys (whose ON DELETE CASCADE took a key's usage with it), and
-- its rows copied.

CREATE TABLE usage_endpoints_new (
  key_id            text NOT NULL,
  consumer_id       text NOT NULL DEFAULT '',
  endpoint          text NOT NULL,
  requests          bigint NOT NULL DEFAULT 0,
  successful        bigint NOT NULL DEFAULT 0,
  failed            bigint NOT NULL DEFAULT 0,
  total_duration_ms double precision NOT NULL DEFAULT 0,
  cost              bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, endpoint, consumer_id)
);
INSERT INTO usage_endpoints_new (key_id, consumer_id, endpoint, requests, successful, failed, total_duration_ms, cost)
  SELECT key_id, consumer_id, endpoint, requests, successful, failed, total_duration_ms, cost FROM usage_endpoints;
DROP TABLE usage_endpoints;
ALTER TABLE usage_endpoints_new RENAME TO usage_endpoints;
CREATE INDEX usage_endpoints_consumer ON usage_endpoints (consumer_id) WHERE consumer_id <> '';

CREATE TABLE usage_customers_new (
  key_id      text NOT NULL,
  consumer_id text NOT NULL DEFAULT '',
  customer_id text NOT NULL,
  requests    bigint NOT NULL DEFAULT 0,
  successful  bigint NOT NULL DEFAULT 0,
  failed      bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, customer_id, consumer_id)
);
INSERT INTO usage_customers_new (key_id, consumer_id, customer_id, requests, successful, failed)
  SELECT key_id, consumer_id, customer_id, requests, successful, failed FROM usage_customers;
DROP TABLE usage_customers;
ALTER TABLE usage_customers_new RENAME TO usage_customers;
CREATE INDEX usage_customers_consumer ON usage_customers (consumer_id) WHERE consumer_id <> '';

CREATE TABLE usage_buckets_new (
  key_id              text NOT NULL,
  consumer_id         text NOT NULL DEFAULT '',
  granularity         text NOT NULL CHECK (granularity IN ('minute', 'hour', 'day', 'month')),
  start               timestamptz NOT NULL,
  requests            bigint NOT NULL DEFAULT 0,
  successful          bigint NOT NULL DEFAULT 0,
  failed              bigint NOT NULL DEFAULT 0,
  rate_limited        bigint NOT NULL DEFAULT 0,
  total_duration_ms   double precision NOT NULL DEFAULT 0,
  cost                bigint NOT NULL DEFAULT 0,
  status_2xx          bigint NOT NULL DEFAULT 0,
  status_3xx          bigint NOT NULL DEFAULT 0,
  status_4xx          bigint NOT NULL DEFAULT 0,
  status_5xx          bigint NOT NULL DEFAULT 0,
  credits_exhausted   bigint NOT NULL DEFAULT 0,
  disabled            bigint NOT NULL DEFAULT 0,
  expired             bigint NOT NULL DEFAULT 0,
  route_not_allowed   bigint NOT NULL DEFAULT 0,
  backend_error       bigint NOT NULL DEFAULT 0,
  backend_unreachable bigint NOT NULL DEFAULT 0,
  latency             text NOT NULL DEFAULT '{}',
  PRIMARY KEY (key_id, granularity, start, consumer_id)
);
INSERT INTO usage_buckets_new (key_id, consumer_id, granularity, start, requests, successful, failed, rate_limited, total_duration_ms, cost, status_2xx, status_3xx, status_4xx, status_5xx, credits_exhausted, disabled, expired, route_not_allowed, backend_error, backend_unreachable, latency)
  SELECT key_id, consumer_id, granularity, start, requests, successful, failed, rate_limited, total_duration_ms, cost, status_2xx, status_3xx, status_4xx, status_5xx, credits_exhausted, disabled, expired, route_not_allowed, backend_error, backend_unreachable, latency FROM usage_buckets;
DROP TABLE usage_buckets;
ALTER TABLE usage_buckets_new RENAME TO usage_buckets;
CREATE INDEX usage_buckets_granularity_start ON usage_buckets (granularity, start);
CREATE INDEX usage_buckets_consumer ON usage_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';

CREATE TABLE usage_endpoint_buckets_new (
  key_id              text NOT NULL,
  consumer_id         text NOT NULL DEFAULT '',
  granularity         text NOT NULL CHECK (granularity IN ('day', 'month')),
  start               timestamptz NOT NULL,
  endpoint            text NOT NULL,
  requests            bigint NOT NULL DEFAULT 0,
  successful          bigint NOT NULL DEFAULT 0,
  failed              bigint NOT NULL DEFAULT 0,
  rate_limited        bigint NOT NULL DEFAULT 0,
  total_duration_ms   double precision NOT NULL DEFAULT 0,
  cost                bigint NOT NULL DEFAULT 0,
  status_2xx          bigint NOT NULL DEFAULT 0,
  status_3xx          bigint NOT NULL DEFAULT 0,
  status_4xx          bigint NOT NULL DEFAULT 0,
  status_5xx          bigint NOT NULL DEFAULT 0,
  credits_exhausted   bigint NOT NULL DEFAULT 0,
  disabled            bigint NOT NULL DEFAULT 0,
  expired             bigint NOT NULL DEFAULT 0,
  route_not_allowed   bigint NOT NULL DEFAULT 0,
  backend_error       bigint NOT NULL DEFAULT 0,
  backend_unreachable bigint NOT NULL DEFAULT 0,
  latency             text NOT NULL DEFAULT '{}',
  PRIMARY KEY (key_id, granularity, start, endpoint, consumer_id)
);
INSERT INTO usage_endpoint_buckets_new (key_id, consumer_id, granularity, start, endpoint, requests, successful, failed, rate_limited, total_duration_ms, cost, status_2xx, status_3xx, status_4xx, status_5xx, credits_exhausted, disabled, expired, route_not_allowed, backend_error, backend_unreachable, latency)
  SELECT key_id, consumer_id, granularity, start, endpoint, requests, successful, failed, rate_limited, total_duration_ms, cost, status_2xx, status_3xx, status_4xx, status_5xx, credits_exhausted, disabled, expired, route_not_allowed, backend_error, backend_unreachable, latency FROM usage_endpoint_buckets;
DROP TABLE usage_endpoint_buckets;
ALTER TABLE usage_endpoint_buckets_new RENAME TO usage_endpoint_buckets;
CREATE INDEX usage_endpoint_buckets_granularity_start ON usage_endpoint_buckets (granularity, start);
CREATE INDEX usage_endpoint_buckets_consumer ON usage_endpoint_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';

CREATE TABLE usage_customer_buckets_new (
  key_id              text NOT NULL,
  consumer_id         text NOT NULL DEFAULT '',
  granularity         text NOT NULL CHECK (granularity IN ('day', 'month')),
  start               timestamptz NOT NULL,
  customer_id         text NOT NULL,
  requests            bigint NOT NULL DEFAULT 0,
  successful          bigint NOT NULL DEFAULT 0,
  failed              bigint NOT NULL DEFAULT 0,
  rate_limited        bigint NOT NULL DEFAULT 0,
  total_duration_ms   double precision NOT NULL DEFAULT 0,
  cost                bigint NOT NULL DEFAULT 0,
  status_2xx          bigint NOT NULL DEFAULT 0,
  status_3xx          bigint NOT NULL DEFAULT 0,
  status_4xx          bigint NOT NULL DEFAULT 0,
  status_5xx          bigint NOT NULL DEFAULT 0,
  credits_exhausted   bigint NOT NULL DEFAULT 0,
  disabled            bigint NOT NULL DEFAULT 0,
  expired             bigint NOT NULL DEFAULT 0,
  route_not_allowed   bigint NOT NULL DEFAULT 0,
  backend_error       bigint NOT NULL DEFAULT 0,
  backend_unreachable bigint NOT NULL DEFAULT 0,
  latency             text NOT NULL DEFAULT '{}',
  PRIMARY KEY (key_id, granularity, start, customer_id, consumer_id)
);
INSERT INTO usage_customer_buckets_new (key_id, consumer_id, granularity, start, customer_id, requests, successful, failed, rate_limited, total_duration_ms, cost, status_2xx, status_3xx, status_4xx, status_5xx, credits_exhausted, disabled, expired, route_not_allowed, backend_error, backend_unreachable, latency)
  SELECT key_id, consumer_id, granularity, start, customer_id, requests, successful, failed, rate_limited, total_duration_ms, cost, status_2xx, status_3xx, status_4xx, status_5xx, credits_exhausted, disabled, expired, route_not_allowed, backend_error, backend_unreachable, latency FROM usage_customer_buckets;
DROP TABLE usage_customer_buckets;
ALTER TABLE usage_customer_buckets_new RENAME TO usage_customer_buckets;
CREATE INDEX usage_customer_buckets_granularity_start ON usage_customer_buckets (granularity, start);
CREATE INDEX usage_customer_buckets_consumer ON usage_customer_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';

CREATE TABLE usage_route_buckets_new (
  key_id              text NOT NULL,
  consumer_id         text NOT NULL DEFAULT '',
  granularity         text NOT NULL CHECK (granularity IN ('day', 'month')),
  start               timestamptz NOT NULL,
  route_id            text NOT NULL,
  requests            bigint NOT NULL DEFAULT 0,
  successful          bigint NOT NULL DEFAULT 0,
  failed              bigint NOT NULL DEFAULT 0,
  rate_limited        bigint NOT NULL DEFAULT 0,
  total_duration_ms   double precision NOT NULL DEFAULT 0,
  cost                bigint NOT NULL DEFAULT 0,
  status_2xx          bigint NOT NULL DEFAULT 0,
  status_3xx          bigint NOT NULL DEFAULT 0,
  status_4xx          bigint NOT NULL DEFAULT 0,
  status_5xx          bigint NOT NULL DEFAULT 0,
  credits_exhausted   bigint NOT NULL DEFAULT 0,
  disabled            bigint NOT NULL DEFAULT 0,
  expired             bigint NOT NULL DEFAULT 0,
  route_not_allowed   bigint NOT NULL DEFAULT 0,
  backend_error       bigint NOT NULL DEFAULT 0,
  backend_unreachable bigint NOT NULL DEFAULT 0,
  latency             text NOT NULL DEFAULT '{}',
  PRIMARY KEY (key_id, granularity, start, route_id, consumer_id)
);
INSERT INTO usage_route_buckets_new (key_id, consumer_id, granularity, start, route_id, requests, successful, failed, rate_limited, total_duration_ms, cost, status_2xx, status_3xx, status_4xx, status_5xx, credits_exhausted, disabled, expired, route_not_allowed, backend_error, backend_unreachable, latency)
  SELECT key_id, consumer_id, granularity, start, route_id, requests, successful, failed, rate_limited, total_duration_ms, cost, status_2xx, status_3xx, status_4xx, status_5xx, credits_exhausted, disabled, expired, route_not_allowed, backend_error, backend_unreachable, latency FROM usage_route_buckets;
DROP TABLE usage_route_buckets;
ALTER TABLE usage_route_buckets_new RENAME TO usage_route_buckets;
CREATE INDEX usage_route_buckets_granularity_start ON usage_route_buckets (granularity, start);
CREATE INDEX usage_route_buckets_consumer ON usage_route_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';

-- Whom a billing export with subject "key" bills a deleted key's usage to (as sql/072).
CREATE TABLE deleted_keys (
  id          text PRIMARY KEY NOT NULL,
  external_id text,
  metadata    text NOT NULL,
  deleted_at  timestamptz NOT NULL
);
CREATE INDEX deleted_keys_deleted_at ON deleted_keys (deleted_at);
