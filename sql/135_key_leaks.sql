-- Keys reported leaked (docs/guides/leaked-keys.md, docs/decisions/0160-leaked-key-reports.md).
-- `leak`: the latest report of the key as JSON text {at, source, url, action}; null: never reported.
ALTER TABLE api_keys ADD COLUMN leak text;

-- GitHub's signed secret scanning reports handled lately, by SHA-256 of the raw body, with the answer
-- given: the same body again, on any replica, within 10 minutes, gets that answer and changes nothing.
CREATE TABLE secret_scanning_reports (
  body_hash    bytea PRIMARY KEY,
  answer       text NOT NULL,
  received_at  timestamptz NOT NULL
);
CREATE INDEX secret_scanning_reports_received ON secret_scanning_reports (received_at);
