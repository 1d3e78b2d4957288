-- sql/070 for the embedded store: usage by route, by day and by month (contract section 15,
-- decision record 0035). route_id '' is the catch-all or no route; a deleted route keeps its usage.
CREATE TABLE usage_route_buckets (
  key_id              text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
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
-- The fleet's series and retention read by granularity and time; a consumer's by its id.
CREATE INDEX usage_route_buckets_granularity_start ON usage_route_buckets (granularity, start);
CREATE INDEX usage_route_buckets_consumer ON usage_route_buckets (consumer_id, granularity, start) WHERE consumer_id <> '';
