-- sql/020 for the embedded store (decision record 0026): usage rows filed under the consumer their
-- key belonged to ('' for none), cost in the totals and buckets, and the buckets' status classes,
-- outcomes and latency histogram (a JSON object of bin -> requests). SQLite cannot change a primary
-- key in place: each table is made again with consumer_id last in it, and its rows copied.

CREATE TABLE usage_endpoints_new (
  key_id            text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  consumer_id       text NOT NULL DEFAULT '',
  endpoint          text NOT NULL,
  requests          bigint NOT NULL DEFAULT 0,
  successful        bigint NOT NULL DEFAULT 0,
  failed            bigint NOT NULL DEFAULT 0,
  total_duration_ms double precision NOT NULL DEFAULT 0,
  cost              bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, endpoint, consumer_id)
);
INSERT INTO usage_endpoints_new (key_id, endpoint, requests, successful, failed, total_duration_ms)
  SELECT key_id, endpoint, requests, successful, failed, total_duration_ms FROM usage_endpoints;
DROP TABLE usage_endpoints;
ALTER TABLE usage_endpoints_new RENAME TO usage_endpoints;
CREATE INDEX usage_endpoints_consumer ON usage_endpoints (consumer_id) WHERE consumer_id <> '';

CREATE TABLE usage_customers_new (
  key_id      text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  consumer_id text NOT NULL DEFAULT '',
  customer_id text NOT NULL,
  requests    bigint NOT NULL DEFAULT 0,
  successful  bigint NOT NULL DEFAULT 0,
  failed      bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, customer_id, consumer_id)
);
INSERT INTO usage_customers_new (key_id, customer_id, requests, successful, failed)
  SELECT key_id, customer_id, requests, successful, failed FROM usage_customers;
DROP TABLE usage_customers;
ALTER TABLE usage_customers_new RENAME TO usage_customers;
CREATE INDEX usage_customers_consumer ON usage_customers (consumer_id) WHERE consumer_id <> '';

CREATE TABLE usage_buckets_new (
  key_id              text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
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
INSERT INTO usage_buckets_new (key_id, granularity, start, requests, successful, failed, rate_limited, total_duration_ms)
  SELECT key_id, granularity, start, requests, successful, failed, rate_limited, total_duration_ms FROM usage_buckets;
DROP TABLE usage_buckets;
ALTER TABLE usage_buckets_new RENAME TO usage_buckets;
CREATE INDEX usage_buckets_granularity_start ON usage_buckets (granularity, start);
CREATE INDEX usage_buckets_consumer ON usage_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';

CREATE TABLE usage_endpoint_buckets_new (
  key_id              text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
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
INSERT INTO usage_endpoint_buckets_new (key_id, granularity, start, endpoint, requests, successful, failed, rate_limited, total_duration_ms)
  SELECT key_id, granularity, start, endpoint, requests, successful, failed, rate_limited, total_duration_ms FROM usage_endpoint_buckets;
DROP TABLE usage_endpoint_buckets;
ALTER TABLE usage_endpoint_buckets_new RENAME TO usage_endpoint_buckets;
CREATE INDEX usage_endpoint_buckets_granularity_start ON usage_endpoint_buckets (granularity, start);
CREATE INDEX usage_endpoint_buckets_consumer ON usage_endpoint_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';

CREATE TABLE usage_customer_buckets_new (
  key_id              text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
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
INSERT INTO usage_customer_buckets_new (key_id, granularity, start, customer_id, requests, successful, failed, rate_limited, total_duration_ms)
  SELECT key_id, granularity, start, customer_id, requests, successful, failed, rate_limited, total_duration_ms FROM usage_customer_buckets;
DROP TABLE usage_customer_buckets;
ALTER TABLE usage_customer_buckets_new RENAME TO usage_customer_buckets;
CREATE INDEX usage_customer_buckets_granularity_start ON usage_customer_buckets (granularity, start);
CREATE INDEX usage_customer_buckets_consumer ON usage_customer_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';
