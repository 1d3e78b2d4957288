-- The embedded store (SQLite): the same tables, columns, keys and checks as sql/001 to sql/013 give
-- Postgres, in one file. A Postgres migration that changes the schema gets its SQLite counterpart
-- here in sql/sqlite/ (tests/integration/embedded-schema.test.ts compares the two).
--
-- Types are spelled as in Postgres where SQLite's affinity fits: text, bigint (integer), double
-- precision (real). SQLite has no timestamp or boolean type: a `timestamptz` column holds epoch
-- milliseconds and a `boolean` column 0 or 1, and the driver (src/store/sqlite-database.ts) reads
-- columns declared so as Date and boolean, as pg does. Bytes are blobs. A bigserial becomes an
-- INTEGER PRIMARY KEY AUTOINCREMENT (never reused, like a sequence), the text id beside it UNIQUE.

CREATE TABLE rate_limit_plans (
  rate_limit_id text PRIMARY KEY NOT NULL,
  description   text NOT NULL DEFAULT '',
  "limit"       bigint NOT NULL CHECK ("limit" >= 1),
  period        text NOT NULL CHECK (period IN ('second', 'minute', 'hour', 'day', 'week', 'month', 'year')),
  -- A plan's limits as a JSON array of {name, limit, period, algorithm}; null for one fixed limit named
  -- after its period, which "limit" and period describe alone (they always hold the first limit).
  limits        text,
  created_at    timestamptz NOT NULL DEFAULT (cast(unixepoch('subsec') * 1000 AS integer)),
  last_updated  timestamptz NOT NULL
);
-- The plan list is ordered by creation time, then id.
CREATE INDEX rate_limit_plans_created_at_id ON rate_limit_plans (created_at, rate_limit_id);

CREATE TABLE api_keys (
  -- seq is insertion order: the newest key's ciphertext is checked against the configured keys at start.
  seq               integer PRIMARY KEY AUTOINCREMENT,
  id                text NOT NULL UNIQUE,
  name              text NOT NULL,
  -- SHA-256 of the secret: the lookup on the proxy path. The secret itself is only stored encrypted.
  secret_hash       blob NOT NULL UNIQUE,
  -- AES-256-GCM: 12-byte IV || 16-byte tag || ciphertext.
  secret_ciphertext blob NOT NULL,
  rate_limit_id     text REFERENCES rate_limit_plans (rate_limit_id),
  created_at        timestamptz NOT NULL,
  last_updated      timestamptz NOT NULL,
  enabled           boolean NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  expires_at        timestamptz,
  external_id       text,
  -- The caller's JSON object as serialised, so it is returned as given.
  metadata          text NOT NULL DEFAULT '{}',
  last_used_at      timestamptz,
  -- After a roll, the previous secret keeps working until previous_secret_expires_at.
  previous_secret_hash       blob UNIQUE,
  previous_secret_expires_at timestamptz
);
-- The key list is ordered by creation time, then id; its filters; the key count of a plan.
CREATE INDEX api_keys_created_at_id ON api_keys (created_at, id);
CREATE INDEX api_keys_rate_limit_id ON api_keys (rate_limit_id);
CREATE INDEX api_keys_external_id ON api_keys (external_id);

-- Usage totals, pre-aggregated per (key, endpoint) and (key, customer).
CREATE TABLE usage_endpoints (
  key_id            text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  endpoint          text NOT NULL,
  requests          bigint NOT NULL DEFAULT 0,
  successful        bigint NOT NULL DEFAULT 0,
  failed            bigint NOT NULL DEFAULT 0,
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

-- Batches already applied: applying a batch twice is a no-op. Pruned after a day by applied_at.
CREATE TABLE usage_batches (
  batch_id   text PRIMARY KEY NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT (cast(unixepoch('subsec') * 1000 AS integer))
);
CREATE INDEX usage_batches_applied_at ON usage_batches (applied_at);

-- Readiness asks whether the database takes writes again after one was refused (a full disk).
CREATE TABLE storage_probe (filler text NOT NULL);

CREATE TABLE admin_tokens (
  id          text PRIMARY KEY NOT NULL,
  name        text NOT NULL,
  -- Space-separated scope names, e.g. 'keys:read keys:write'.
  scopes      text NOT NULL,
  -- SHA-256 of the token: the secret itself is shown once and never stored.
  token_hash  blob NOT NULL UNIQUE,
  expires_at  timestamptz,
  created_at  timestamptz NOT NULL
);

CREATE TABLE audit_log (
  -- Orders entries written in the same millisecond: newest first is (time, seq) descending.
  seq            integer PRIMARY KEY AUTOINCREMENT,
  id             text NOT NULL UNIQUE,
  time           timestamptz NOT NULL,
  actor_type     text NOT NULL CHECK (actor_type IN ('root', 'token')),
  actor_id       text,
  actor_name     text,
  action         text NOT NULL,
  target_type    text NOT NULL,
  target_id      text NOT NULL,
  request_id     text NOT NULL,
  client_address text NOT NULL,
  -- JSON texts of the target before and after the change (null: it did not exist); never a secret.
  before_state   text,
  after_state    text
);
CREATE INDEX audit_log_time_seq ON audit_log (time DESC, seq DESC);
CREATE INDEX audit_log_target ON audit_log (target_id, time DESC);
CREATE INDEX audit_log_actor ON audit_log (actor_id, time DESC);

-- Usage over time: per key by minute, hour, day and month; per endpoint and customer by day and month.
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
