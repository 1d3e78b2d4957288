-- Readiness asks whether the database takes writes again after one was refused (a full disk, a
-- read-only server): it inserts a few rows here that need new space, and rolls them back.
CREATE TABLE storage_probe (filler text NOT NULL);
