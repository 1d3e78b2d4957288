-- Consumers (contract section 13): the account that holds keys, whose plan all its keys share.
-- A key belongs to at most one consumer; a consumer holds at most one plan. Neither reference cascades:
-- deleting a consumer detaches its keys (and a plan unbinds its consumers) in the same transaction, each
-- with its audit entry, so a reference can only break in a race, which the database then refuses.

CREATE TABLE consumers (
  id            text PRIMARY KEY,
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

ALTER TABLE api_keys ADD COLUMN consumer_id text REFERENCES consumers (id);
-- The key list's consumerId filter, and the key count of a consumer.
CREATE INDEX api_keys_consumer_id ON api_keys (consumer_id);
