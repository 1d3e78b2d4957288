-- Usage is billing data (docs/decisions/0064-usage-outlives-its-key.md): deleting a key removes the key,
-- never the usage already counted. The usage tables lose their reference to api_keys, whose ON DELETE
-- CASCADE took a key's rows (and so its consumer's, the fleet's and the billing exports' share of them)
-- with it. A usage row's key_id may now name a deleted key.
ALTER TABLE usage_endpoints DROP CONSTRAINT usage_endpoints_key_id_fkey;
ALTER TABLE usage_customers DROP CONSTRAINT usage_customers_key_id_fkey;
ALTER TABLE usage_buckets DROP CONSTRAINT usage_buckets_key_id_fkey;
ALTER TABLE usage_endpoint_buckets DROP CONSTRAINT usage_endpoint_buckets_key_id_fkey;
ALTER TABLE usage_customer_buckets DROP CONSTRAINT usage_customer_buckets_key_id_fkey;
ALTER TABLE usage_route_buckets DROP CONSTRAINT usage_route_buckets_key_id_fkey;

-- Whom a billing export with subject "key" bills a deleted key's usage to: its externalId and metadata
-- when it was deleted, written in the delete's transaction, kept as long as the export's ledger.
CREATE TABLE deleted_keys (
  id          text PRIMARY KEY,
  external_id text,
  metadata    text NOT NULL,
  deleted_at  timestamptz NOT NULL
);
CREATE INDEX deleted_keys_deleted_at ON deleted_keys (deleted_at);
