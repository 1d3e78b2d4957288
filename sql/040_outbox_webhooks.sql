-- Events and webhooks (contract section 16). An event is written to the outbox in the transaction of
-- the change that causes it; a delivery worker (one replica at a time, under the `leases` row) fans each
-- event out to the webhooks subscribed to its type and sends it, at least once, with the event's id as
-- `webhook-id` on every attempt (docs/decisions/0028).

CREATE TABLE outbox_events (
  -- The order events are fanned out in.
  seq         bigserial NOT NULL,
  -- evt_…: the webhook-id of every delivery of the event.
  id          text PRIMARY KEY,
  type        text NOT NULL,
  occurred_at timestamptz NOT NULL,
  -- The delivery body {type, timestamp, data} as sent, byte for byte, on every attempt; never a secret.
  payload     text NOT NULL,
  -- Set once a delivery exists for every webhook subscribed to the event's type.
  fanned_out  boolean NOT NULL DEFAULT false
);
CREATE INDEX outbox_events_waiting ON outbox_events (seq) WHERE NOT fanned_out;
CREATE INDEX outbox_events_occurred_at ON outbox_events (occurred_at);

-- Events emitted at most once per key until `until`: a key's expiry notice, a threshold crossed in a window.
CREATE TABLE outbox_once (
  key   text PRIMARY KEY,
  until timestamptz NOT NULL
);
CREATE INDEX outbox_once_until ON outbox_once (until);

CREATE TABLE webhooks (
  id                text PRIMARY KEY,
  url               text NOT NULL,
  -- The event types subscribed to, as a JSON array.
  events            text NOT NULL,
  description       text NOT NULL DEFAULT '',
  enabled           boolean NOT NULL DEFAULT true,
  -- The signing secret (whsec_…), AES-256-GCM like a key's: 12-byte IV || 16-byte tag || ciphertext.
  secret_ciphertext bytea NOT NULL,
  created_at        timestamptz NOT NULL,
  last_updated      timestamptz NOT NULL,
  -- The first failed attempt since the last success: three days of failures disable the webhook.
  failing_since     timestamptz,
  -- Set when Tollgate disabled the webhook itself (null when an administrator did, or it is enabled).
  disabled_at       timestamptz,
  disabled_reason   text
);
CREATE INDEX webhooks_created_at_id ON webhooks (created_at, id);

CREATE TABLE webhook_deliveries (
  -- dlv_…
  id               text PRIMARY KEY,
  webhook_id       text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id         text NOT NULL REFERENCES outbox_events (id) ON DELETE CASCADE,
  event_type       text NOT NULL,
  created_at       timestamptz NOT NULL,
  state            text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  first_attempt_at timestamptz,
  last_attempt_at  timestamptz,
  -- The receiver's HTTP status of the last attempt; null: no answer (last_error says why).
  last_status      integer,
  last_error       text,
  -- When the next attempt is due (while one is in flight: when it is given up as lost); null once
  -- delivered or failed.
  next_attempt_at  timestamptz,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
-- The delivery log, newest first.
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_event_id ON webhook_deliveries (event_id);

-- Work only one replica at a time may do (the delivery worker): who holds it, and until when.
CREATE TABLE leases (
  name       text PRIMARY KEY,
  holder     text NOT NULL,
  expires_at timestamptz NOT NULL
);

-- The keys whose expiry notices (key.expiring) are due: those expiring within the next 7 days.
CREATE INDEX api_keys_expires_at ON api_keys (expires_at);

-- Tollgate itself records the webhooks it disables after three days of failures.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_type_check CHECK (actor_type IN ('root', 'token', 'system'));
