-- sql/078 for the embedded store (docs/decisions/0078-billing-export-batches.md): the types `stripe-v2`
-- and `metronome`, `stream_url` and `retry_after`. SQLite cannot change a CHECK in place, and dropping
-- billing_exports would cascade to its ledger, sends and runs (foreign keys are on and cannot be turned
-- off inside the migration's transaction): so every billing table is copied into a `_next` table that
-- refers only to the other `_next` tables, the old ones are dropped children first, and the copies take
-- their names (a rename rewrites the references of the tables that point to it).


CREATE TABLE billing_exports_next (
  id                    text PRIMARY KEY NOT NULL,
  type                  text NOT NULL CHECK (type IN ('stripe', 'stripe-v2', 'metronome', 'openmeter', 'lago', 'cloudevents')),
  url                   text NOT NULL,
  -- AES-256-GCM like a key's secret (IV || tag || ciphertext); null: the receiver takes none.
  credential_ciphertext blob,
  event_name            text NOT NULL,
  granularity           text NOT NULL CHECK (granularity IN ('minute', 'hour', 'day')),
  subject               text NOT NULL CHECK (subject IN ('consumer', 'key')),
  customer_field        text,
  created_at            timestamptz NOT NULL,
  last_updated          timestamptz NOT NULL,
  -- The replica running the export and when it last took or renewed the lease: one at a time.
  lease_holder          text,
  lease_taken_at        timestamptz,
  -- The receiver is failing: consecutive failed runs, and no scheduled delivery before this instant.
  delivery_failures     integer NOT NULL DEFAULT 0,
  deliver_after         timestamptz,
  -- stripe-v2 only: the host of the meter event stream; null: `url`.
  stream_url            text,
  -- The receiver asked to wait (Retry-After): no run, scheduled or manual, sends before this instant.
  retry_after           timestamptz
);

CREATE TABLE billing_export_buckets_next (
  export_id    text NOT NULL REFERENCES billing_exports_next (id) ON DELETE CASCADE,
  subject_id   text NOT NULL,
  bucket_start timestamptz NOT NULL,
  units        bigint NOT NULL,
  revision     integer NOT NULL,
  PRIMARY KEY (export_id, subject_id, bucket_start)
);

CREATE TABLE billing_export_sends_next (
  idempotency_id text PRIMARY KEY NOT NULL,
  export_id      text NOT NULL REFERENCES billing_exports_next (id) ON DELETE CASCADE,
  subject_id     text NOT NULL,
  bucket_start   timestamptz NOT NULL,
  revision       integer NOT NULL,
  units          bigint NOT NULL,
  customer       text NOT NULL,
  created_at     timestamptz NOT NULL,
  -- null: not delivered yet.
  delivered_at   timestamptz,
  -- A refused send (a 4xx) waits for its own backoff; an unreachable receiver holds back the export's.
  attempts       integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  UNIQUE (export_id, subject_id, bucket_start, revision)
);

CREATE TABLE billing_export_runs_next (
  -- Orders the log: runs started in the same millisecond keep the order they started in.
  seq              integer PRIMARY KEY AUTOINCREMENT,
  id               text NOT NULL UNIQUE,
  export_id        text NOT NULL REFERENCES billing_exports_next (id) ON DELETE CASCADE,
  started_by       text NOT NULL CHECK (started_by IN ('schedule', 'manual')),
  started_at       timestamptz NOT NULL,
  -- null: the replica stopped mid-run (killed); its sends are retried under the same ids.
  finished_at      timestamptz,
  -- Buckets that end at or before this instant were closed for this run.
  closed_before    timestamptz NOT NULL,
  planned          integer NOT NULL DEFAULT 0,
  delivered        integer NOT NULL DEFAULT 0,
  failed           integer NOT NULL DEFAULT 0,
  -- Subjects with usage and no customer id (JSON array of ids, at most 100): not sent, kept for later.
  skipped_subjects text NOT NULL DEFAULT '[]',
  error            text
);

CREATE TABLE billing_export_attempts_next (
  run_id         text NOT NULL REFERENCES billing_export_runs_next (id) ON DELETE CASCADE,
  idempotency_id text NOT NULL REFERENCES billing_export_sends_next (idempotency_id) ON DELETE CASCADE,
  at             timestamptz NOT NULL,
  -- The receiver's HTTP status; null: no answer (timeout, connection refused or closed).
  status         integer,
  -- Why it failed, never with the credential.
  error          text,
  PRIMARY KEY (run_id, idempotency_id)
);

INSERT INTO billing_exports_next (id, type, url, credential_ciphertext, event_name, granularity, subject, customer_field, created_at, last_updated, lease_holder, lease_taken_at, delivery_failures, deliver_after)
  SELECT id, type, url, credential_ciphertext, event_name, granularity, subject, customer_field, created_at, last_updated, lease_holder, lease_taken_at, delivery_failures, deliver_after FROM billing_exports;

INSERT INTO billing_export_buckets_next (export_id, subject_id, bucket_start, units, revision)
  SELECT export_id, subject_id, bucket_start, units, revision FROM billing_export_buckets;

INSERT INTO billing_export_sends_next (idempotency_id, export_id, subject_id, bucket_start, revision, units, customer, created_at, delivered_at, attempts, next_attempt_at)
  SELECT idempotency_id, export_id, subject_id, bucket_start, revision, units, customer, created_at, delivered_at, attempts, next_attempt_at FROM billing_export_sends;

INSERT INTO billing_export_runs_next (seq, id, export_id, started_by, started_at, finished_at, closed_before, planned, delivered, failed, skipped_subjects, error)
  SELECT seq, id, export_id, started_by, started_at, finished_at, closed_before, planned, delivered, failed, skipped_subjects, error FROM billing_export_runs;

INSERT INTO billing_export_attempts_next (run_id, idempotency_id, at, status, error)
  SELECT run_id, idempotency_id, at, status, error FROM billing_export_attempts;

DROP TABLE billing_export_attempts;

DROP TABLE billing_export_buckets;

DROP TABLE billing_export_sends;

DROP TABLE billing_export_runs;

DROP TABLE billing_exports;

ALTER TABLE billing_exports_next RENAME TO billing_exports;

ALTER TABLE billing_export_buckets_next RENAME TO billing_export_buckets;

ALTER TABLE billing_export_sends_next RENAME TO billing_export_sends;

ALTER TABLE billing_export_runs_next RENAME TO billing_export_runs;

ALTER TABLE billing_export_attempts_next RENAME TO billing_export_attempts;

CREATE INDEX billing_exports_created_at_id ON billing_exports (created_at, id);

CREATE INDEX billing_export_buckets_start ON billing_export_buckets (bucket_start);

CREATE INDEX billing_export_sends_pending ON billing_export_sends (export_id, next_attempt_at) WHERE delivered_at IS NULL;

CREATE INDEX billing_export_sends_created_at ON billing_export_sends (created_at);

CREATE INDEX billing_export_runs_export ON billing_export_runs (export_id, seq);

CREATE INDEX billing_export_runs_started_at ON billing_export_runs (started_at);

CREATE INDEX billing_export_attempts_send ON billing_export_attempts (idempotency_id);
