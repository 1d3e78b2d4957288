-- Key lifecycle (contract section 6) and plan reads and changes (section 7). Existing keys stay enabled,
-- without expiry, owner or metadata; existing plans were last changed when they were created.

ALTER TABLE api_keys
  ADD COLUMN enabled boolean NOT NULL DEFAULT true,
  ADD COLUMN expires_at timestamptz,
  ADD COLUMN external_id text,
  -- The caller's JSON object as serialised, so it is returned as given (jsonb would reorder its keys).
  ADD COLUMN metadata text NOT NULL DEFAULT '{}',
  ADD COLUMN last_used_at timestamptz,
  -- After a roll, the previous secret keeps working until previous_secret_expires_at.
  ADD COLUMN previous_secret_hash bytea UNIQUE,
  ADD COLUMN previous_secret_expires_at timestamptz;

-- Filters of the key list, and the key count of a plan.
CREATE INDEX api_keys_rate_limit_id ON api_keys (rate_limit_id);
CREATE INDEX api_keys_external_id ON api_keys (external_id);

ALTER TABLE rate_limit_plans ADD COLUMN last_updated timestamptz;
UPDATE rate_limit_plans SET last_updated = created_at;
ALTER TABLE rate_limit_plans ALTER COLUMN last_updated SET NOT NULL;
-- The plan list is ordered by creation time, then id, like the key list.
CREATE INDEX rate_limit_plans_created_at_id ON rate_limit_plans (created_at, rate_limit_id);
