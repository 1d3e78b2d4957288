-- sql/135 for the embedded store: a key's latest leak report, and the reports handled lately.
ALTER TABLE api_keys ADD COLUMN leak text;

CREATE TABLE secret_scanning_reports (
  body_hash    blob PRIMARY KEY NOT NULL,
  answer       text NOT NULL,
  received_at  timestamptz NOT NULL
);
CREATE INDEX secret_scanning_reports_received ON secret_scanning_reports (received_at);
