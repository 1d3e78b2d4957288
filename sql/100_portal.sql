-- The developer portal (docs/guides/portal.md, docs/decisions/0100-portal-sessions-read-from-the-database.md).
-- Its settings: one row (id 1), the settings as the API shows them (JSON text), the OIDC client secret
-- sealed like a key's secret, and the API reference document Tollgate fetched from `apiReference.url`.
CREATE TABLE portal_settings (
  id                         integer PRIMARY KEY CHECK (id = 1),
  settings                   text NOT NULL,
  oidc_secret_ciphertext     bytea,
  reference_document         text,
  reference_fetched_at       timestamptz,
  reference_error            text,
  last_updated               timestamptz NOT NULL
);

-- Portal sessions. `id` is the public id (pss_…) the management API lists and ends; the sign-in code
-- and the session token (the cookie) are stored as SHA-256 hashes only. A session is active once
-- signed in (token_hash set) until expires_at; before that its code works once, until code_expires_at.
-- Deleting the consumer deletes its sessions.
CREATE TABLE portal_sessions (
  id               text PRIMARY KEY,
  consumer_id      text NOT NULL REFERENCES consumers (id) ON DELETE CASCADE,
  user_id          text NOT NULL,
  user_email       text,
  user_name        text,
  ttl_seconds      integer NOT NULL,
  code_hash        bytea UNIQUE,
  code_expires_at  timestamptz NOT NULL,
  token_hash       bytea UNIQUE,
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL
);
CREATE INDEX portal_sessions_consumer ON portal_sessions (consumer_id, created_at);
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);

-- The portal actor of the audit log: a portal user (actor_id: their id, actor_name: email or name)
-- acting for their consumer.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_type_check CHECK (actor_type IN ('root', 'token', 'system', 'portal'));
ALTER TABLE audit_log ADD COLUMN actor_consumer_id text;
