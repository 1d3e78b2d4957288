-- Admin tokens with scopes, and the audit log of every management change (contract section 9).

CREATE TABLE admin_tokens (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  -- Space-separated scope names, e.g. 'keys:read keys:write'.
  scopes      text NOT NULL,
  -- SHA-256 of the token: the secret itself is shown once and never stored.
  token_hash  bytea NOT NULL UNIQUE,
  expires_at  timestamptz,
  created_at  timestamptz NOT NULL
);

CREATE TABLE audit_log (
  -- Orders entries written in the same millisecond: newest first is (time, seq) descending.
  seq            bigserial NOT NULL,
  id             text PRIMARY KEY,
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
-- Newest first, and the filters of GET /tollgate/audit-log.
CREATE INDEX audit_log_time_seq ON audit_log (time DESC, seq DESC);
CREATE INDEX audit_log_target ON audit_log (target_id, time DESC);
CREATE INDEX audit_log_actor ON audit_log (actor_id, time DESC);
