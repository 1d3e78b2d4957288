-- Who disabled a key (docs/decisions/0150-portal-administrators-decide.md): true when its portal user
-- did, so the portal enables only what it disabled itself; false when enabled, or disabled by an
-- administrator (every key disabled before this migration counts as an administrator's).
ALTER TABLE api_keys ADD COLUMN disabled_in_portal boolean NOT NULL DEFAULT 0 CHECK (disabled_in_portal IN (0, 1));
