-- The key list is ordered by creation time, then id (its cursor is that pair): insertion order (seq)
-- differs from creation time when keys are created concurrently.
CREATE INDEX api_keys_created_at_id ON api_keys (created_at, id);
