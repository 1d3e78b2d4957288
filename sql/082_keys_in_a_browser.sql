-- Keys in a browser (docs/guides/browser.md, docs/decisions/0082-cors-and-key-restrictions.md): a
-- route's CORS policy (JSON, null: none), the origins and client addresses a key is restricted to
-- (JSON arrays, null: any), and the two refusals they bring, counted in usage like the others.
ALTER TABLE routes ADD COLUMN cors text;
ALTER TABLE api_keys ADD COLUMN allowed_origins text;
ALTER TABLE api_keys ADD COLUMN allowed_addresses text;
ALTER TABLE usage_buckets
  ADD COLUMN origin_not_allowed bigint NOT NULL DEFAULT 0,
  ADD COLUMN address_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_endpoint_buckets
  ADD COLUMN origin_not_allowed bigint NOT NULL DEFAULT 0,
  ADD COLUMN address_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_customer_buckets
  ADD COLUMN origin_not_allowed bigint NOT NULL DEFAULT 0,
  ADD COLUMN address_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_route_buckets
  ADD COLUMN origin_not_allowed bigint NOT NULL DEFAULT 0,
  ADD COLUMN address_not_allowed bigint NOT NULL DEFAULT 0;
