-- sql/040 for the embedded store: the outbox, webhooks and their deliveries, the leases, the expiry
-- index of keys, and the audit log's `system` actor (SQLite cannot change a CHECK in place: the table
-- is rebuilt, its rows and indexes as they were).

CREATE TABLE outbox_events (
  seq         integer PRIMARY KEY AUTOINCREMENT,
  id          text NOT NULL UNIQUE,
  type        text NOT NULL,
  occurred_at timestamptz NOT NULL,
  payload     text NOT NULL,
  fanned_out  boolean NOT NULL DEFAULT 0 CHECK (fanned_out IN (0, 1))
);
CREATE INDEX outbox_events_waiting ON outbox_events (seq) WHERE NOT fanned_out;
CREATE INDEX outbox_events_occurred_at ON outbox_events (occurred_at);

CREATE TABLE outbox_once (
  key   text PRIMARY KEY NOT NULL,
  until timestamptz NOT NULL
);
CREATE INDEX outbox_once_until ON outbox_once (until);

CREATE TABLE webhooks (
  id                text PRIMARY KEY NOT NULL,
  url               text NOT NULL,
  events            text NOT NULL,
  description       text NOT NULL DEFAULT '',
  enabled           boolean NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  secret_ciphertext blob NOT NULL,
  created_at        timestamptz NOT NULL,
  last_updated      timestamptz NOT NULL,
  failing_since     timestamptz,
  disabled_at       timestamptz,
  disabled_reason   text
);
CREATE INDEX webhooks_created_at_id ON webhooks (created_at, id);

CREATE TABLE webhook_deliveries (
  id               text PRIMARY KEY NOT NULL,
  webhook_id       text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id         text NOT NULL REFERENCES outbox_events (id) ON DELETE CASCADE,
  event_type       text NOT NULL,
  created_at       timestamptz NOT NULL,
  state            text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  first_attempt_at timestamptz,
  last_attempt_at  timestamptz,
  last_status      integer,
  last_error       text,
  next_attempt_at  timestamptz,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_event_id ON webhook_deliveries (event_id);

CREATE TABLE leases (
  name       text PRIMARY KEY NOT NULL,
  holder     text NOT NULL,
  expires_at timestamptz NOT NULL
);

CREATE INDEX api_keys_expires_at ON api_keys (expires_at);

CREATE TABLE audit_log_with_system (
  seq            integer PRIMARY KEY AUTOINCREMENT,
  id             text NOT NULL UNIQUE,
  time           timestamptz NOT NULL,
  actor_type     text NOT NULL CHECK (actor_type IN ('root', 'token', 'system')),
  actor_id       text,
  actor_name     text,
  action         text NOT NULL,
  target_type    text NOT NULL,
  target_id      text NOT NULL,
  request_id     text NOT NULL,
  client_address text NOT NULL,
  before_state   text,
  after_state    text
);
INSERT INTO audit_log_with_system (seq, id, time, actor_type, actor_id, actor_name, action, target_type, target_id, request_id, client_address, before_state, after_state)
  SELECT seq, id, time, actor_type, actor_id, actor_name, action, target_type, target_id, request_id, client_address, before_state, after_state FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_with_system RENAME TO audit_log;
CREATE INDEX audit_log_time_seq ON audit_log (time DESC, seq DESC);
CREATE INDEX audit_log_target ON audit_log (target_id, time DESC);
CREATE INDEX audit_log_actor ON audit_log (actor_id, time DESC);
