-- Keys, plans and usage. Usage is stored pre-aggregated per (key, endpoint) and (key, customer):
-- the totals of the key detail are sums over its endpoint rows.

CREATE TABLE rate_limit_plans (
  rate_limit_id text PRIMARY KEY,
  description   text NOT NULL DEFAULT '',
  "limit"       bigint NOT NULL CHECK ("limit" >= 1),
  period        text NOT NULL CHECK (period IN ('second', 'minute', 'hour', 'day', 'week', 'month')),
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  -- seq orders the list (oldest first) and is the pagination cursor.
  seq               bigserial UNIQUE NOT NULL,
  id                text PRIMARY KEY,
  name              text NOT NULL,
  -- SHA-256 of the secret: the lookup on the proxy path. The secret itself is only stored encrypted.
  secret_hash       bytea NOT NULL UNIQUE,
  -- AES-256-GCM: 12-byte IV || 16-byte tag || ciphertext;.
  secret_ciphertext bytea NOT NULL,
  rate_limit_id     text REFERENCES rate_limit_plans (rate_limit_id),
  created_at        timestamptz NOT NULL,
  last_updated      timestamptz NOT NULL
);

CREATE TABLE usage_endpoints (
  key_id           text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  endpoint         text NOT NULL,
  requests         bigint NOT NULL DEFAULT 0,
  successful       bigint NOT NULL DEFAULT 0,
  failed           bigint NOT NULL DEFAULT 0,
  -- Sum of response times, so the average stays exact however many batches add to it.
  total_duration_ms double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, endpoint)
);

CREATE TABLE usage_customers (
  key_id      text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  customer_id text NOT NULL,
  requests    bigint NOT NULL DEFAULT 0,
  successful  bigint NOT NULL DEFAULT 0,
  failed      bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, customer_id)
);

-- Batches already applied: applying a batch twice (a flusher that died after commit) is a no-op.
CREATE TABLE usage_batches (
  batch_id   text PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
);
