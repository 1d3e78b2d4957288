-- sql/061 for the embedded store: prepaid credits on keys and consumers (contract section 14).
ALTER TABLE api_keys ADD COLUMN credits_epoch integer NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN credits_granted integer;
ALTER TABLE api_keys ADD COLUMN credits_window integer NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN credits_spent integer NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN credits_refill text;
ALTER TABLE api_keys ADD COLUMN credits_low_at integer;
ALTER TABLE consumers ADD COLUMN credits_epoch integer NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN credits_granted integer;
ALTER TABLE consumers ADD COLUMN credits_window integer NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN credits_spent integer NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN credits_refill text;
ALTER TABLE consumers ADD COLUMN credits_low_at integer;
