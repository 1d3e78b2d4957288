-- Billing exports to Metronome and Stripe's v2 meter event stream, sent in batches
-- (docs/decisions/0078-billing-export-batches.md): two more types, the stream's own host for
-- `stripe-v2`, and the instant before which a receiver that answered 429 (or 503) with Retry-After
-- is sent nothing, by any run.
ALTER TABLE billing_exports DROP CONSTRAINT billing_exports_type_check;
ALTER TABLE billing_exports ADD CONSTRAINT billing_exports_type_check
  CHECK (type IN ('stripe', 'stripe-v2', 'metronome', 'openmeter', 'lago', 'cloudevents'));
-- stripe-v2 only: the host of the meter event stream; null: `url`.
ALTER TABLE billing_exports ADD COLUMN stream_url text;
-- The receiver asked to wait (Retry-After): no run, scheduled or manual, sends before this instant.
ALTER TABLE billing_exports ADD COLUMN retry_after timestamptz;
