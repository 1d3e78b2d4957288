-- Prepaid credits (contract section 14), on the key or the consumer that holds them (src/plans/balance.ts):
-- the balance as granted in its period (epoch: bumped by every set; window: the refill window it
-- belongs to, epoch ms, 0 without a refill), and what was spent in that period as last saved by the
-- replicas (the count a lost Redis resumes from). Money is kept here, never only in Redis.
ALTER TABLE api_keys ADD COLUMN credits_epoch bigint NOT NULL DEFAULT 0;
-- null: the key holds no balance.
ALTER TABLE api_keys ADD COLUMN credits_granted bigint;
ALTER TABLE api_keys ADD COLUMN credits_window bigint NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN credits_spent bigint NOT NULL DEFAULT 0;
-- JSON {"amount", "interval": "day" | "month", "dayOfMonth"}, or null: no refill.
ALTER TABLE api_keys ADD COLUMN credits_refill text;
-- credits.low below this many units; null: below a tenth of the refill amount, if any.
ALTER TABLE api_keys ADD COLUMN credits_low_at bigint;
ALTER TABLE consumers ADD COLUMN credits_epoch bigint NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN credits_granted bigint;
ALTER TABLE consumers ADD COLUMN credits_window bigint NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN credits_spent bigint NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN credits_refill text;
ALTER TABLE consumers ADD COLUMN credits_low_at bigint;
