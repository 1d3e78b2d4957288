-- Billing exports (contract section 17): closed usage buckets sent to Stripe, OpenMeter, Lago or any
-- CloudEvents receiver, exactly once to the unit. Each export keeps, per subject and bucket, the sum it
-- has committed to send; a run sends the difference between a bucket's stored usage and that sum as the
-- next revision, under an idempotency id derived from (export, subject, bucket start, revision), so a
-- retry never bills twice and late usage arrives as a correction (docs/decisions/0050).

CREATE TABLE billing_exports (
  id                    text PRIMARY KEY,
  type                  text NOT NULL CHECK (type IN ('stripe', 'openmeter', 'lago', 'cloudevents')),
  url                   text NOT NULL,
  -- AES-256-GCM like a key's secret (IV || tag || ciphertext); null: the receiver takes none.
  credential_ciphertext bytea,
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
  deliver_after         timestamptz
);
-- The export list is ordered by creation time, then id.
CREATE INDEX billing_exports_created_at_id ON billing_exports (created_at, id);

-- Per export, subject and bucket: the units committed to send so far (the sum of its sends) and the
-- last revision.
CREATE TABLE billing_export_buckets (
  export_id    text NOT NULL REFERENCES billing_exports (id) ON DELETE CASCADE,
  subject_id   text NOT NULL,
  bucket_start timestamptz NOT NULL,
  units        bigint NOT NULL,
  revision     integer NOT NULL,
  PRIMARY KEY (export_id, subject_id, bucket_start)
);
CREATE INDEX billing_export_buckets_start ON billing_export_buckets (bucket_start);

-- One request to the receiver per revision, written before it is sent and kept until delivered.
CREATE TABLE billing_export_sends (
  idempotency_id text PRIMARY KEY,
  export_id      text NOT NULL REFERENCES billing_exports (id) ON DELETE CASCADE,
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
CREATE INDEX billing_export_sends_pending ON billing_export_sends (export_id, next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX billing_export_sends_created_at ON billing_export_sends (created_at);

-- The run log: what each run planned and what the receiver answered to each send it tried.
CREATE TABLE billing_export_runs (
  -- Orders the log: runs started in the same millisecond keep the order they started in.
  seq              bigserial PRIMARY KEY,
  id               text NOT NULL UNIQUE,
  export_id        text NOT NULL REFERENCES billing_exports (id) ON DELETE CASCADE,
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
CREATE INDEX billing_export_runs_export ON billing_export_runs (export_id, seq);
CREATE INDEX billing_export_runs_started_at ON billing_export_runs (started_at);

CREATE TABLE billing_export_attempts (
  run_id         text NOT NULL REFERENCES billing_export_runs (id) ON DELETE CASCADE,
  idempotency_id text NOT NULL REFERENCES billing_export_sends (idempotency_id) ON DELETE CASCADE,
  at             timestamptz NOT NULL,
  -- The receiver's HTTP status; null: no answer (timeout, connection refused or closed).
  status         integer,
  -- Why it failed, never with the credential.
  error          text,
  PRIMARY KEY (run_id, idempotency_id)
);
CREATE INDEX billing_export_attempts_send ON billing_export_attempts (idempotency_id);
