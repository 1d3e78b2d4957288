-- sql/016 for the embedded store: consumers (contract section 13), and the consumer of a key.

CREATE TABLE consumers (
  id            text PRIMARY KEY NOT NULL,
  name          text NOT NULL,
  -- The owner's id in the caller's system; unique when set.
  external_id   text UNIQUE,
  -- The caller's JSON object as serialised, so it is returned as given (as a key's).
  metadata      text NOT NULL DEFAULT '{}',
  rate_limit_id text REFERENCES rate_limit_plans (rate_limit_id),
  created_at    timestamptz NOT NULL,
  last_updated  timestamptz NOT NULL
);
-- The consumer list is ordered by creation time, then id; the consumer count of a plan.
CREATE INDEX consumers_created_at_id ON consumers (created_at, id);
CREATE INDEX consumers_rate_limit_id ON consumers (rate_limit_id);

-- SQLite adds a referencing column only with a null default, which this one has.
ALTER TABLE api_keys ADD COLUMN consumer_id text REFERENCES consumers (id);
-- The key list's consumerId filter, and the key count of a consumer.
CREATE INDEX api_keys_consumer_id ON api_keys (consumer_id);
