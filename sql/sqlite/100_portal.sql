-- sql/100 for the embedded store: the portal's settings and sessions (hashes only, never a raw code
-- or token). A consumer's sessions go with it.
CREATE TABLE portal_settings (
  id                         integer PRIMARY KEY NOT NULL CHECK (id = 1),
  settings                   text NOT NULL,
  oidc_secret_ciphertext     blob,
  reference_document         text,
  reference_fetched_at       timestamptz,
  reference_error            text,
  last_updated               timestamptz NOT NULL
);

CREATE TABLE portal_sessions (
  id               text PRIMARY KEY NOT NULL,
  consumer_id      text NOT NULL REFERENCES consumers (id) ON DELETE CASCADE,
  user_id          text NOT NULL,
  user_email       text,
  user_name        text,
  ttl_seconds      integer NOT NULL,
  code_hash        blob UNIQUE,
  code_expires_at  timestamptz NOT NULL,
  token_hash       blob UNIQUE,
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL
);
CREATE INDEX portal_sessions_consumer ON portal_sessions (consumer_id, created_at);
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);

-- The portal actor of the audit log (SQLite changes a CHECK only by copying the table).
CREATE TABLE audit_log_with_portal (
  seq               integer PRIMARY KEY AUTOINCREMENT,
  id                text NOT NULL UNIQUE,
  time              timestamptz NOT NULL,
  actor_type        text NOT NULL CHECK (actor_type IN ('root', 'token', 'system', 'portal')),
  actor_id          text,
  actor_name        text,
  actor_consumer_id text,
  action            text NOT NULL,
  target_type       text NOT NULL,
  target_id         text NOT NULL,
  request_id        text NOT NULL,
  client_address    text NOT NULL,
  before_state      text,
  after_state       text
);
INSERT INTO audit_log_with_portal (seq, id, time, actor_type, actor_id, actor_name, action, target_type, target_id, request_id, client_address, before_state, after_state)
  SELECT seq, id, time, actor_type, actor_id, actor_name, action, target_type, target_id, request_id, client_address, before_state, after_state FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_with_portal RENAME TO audit_log;
CREATE INDEX audit_log_time_seq ON audit_log (time DESC, seq DESC);
CREATE INDEX audit_log_target ON audit_log (target_id, time DESC);
CREATE INDEX audit_log_actor ON audit_log (actor_id, time DESC);
