-- A route may compare its path prefix without regard to case, for a backend that routes so (Express's
-- default): docs/decisions/0066-case-insensitive-matches.md. A case-insensitive route overlaps another
-- whose prefix differs only in case, so the overlap check reads lower(path_prefix).
ALTER TABLE routes ADD COLUMN case_insensitive boolean NOT NULL DEFAULT false;
