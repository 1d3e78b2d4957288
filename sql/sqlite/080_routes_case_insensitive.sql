-- sql/080 for the embedded store: a route may compare its path prefix without regard to case.
ALTER TABLE routes ADD COLUMN case_insensitive boolean NOT NULL DEFAULT 0 CHECK (case_insensitive IN (0, 1));
