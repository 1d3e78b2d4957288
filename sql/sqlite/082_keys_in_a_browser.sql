-- sql/082 for the embedded store: a route's CORS policy, a key's allowed origins and addresses, and
-- the usage outcomes of their refusals.
ALTER TABLE routes ADD COLUMN cors text;
ALTER TABLE api_keys ADD COLUMN allowed_origins text;
ALTER TABLE api_keys ADD COLUMN allowed_addresses text;
ALTER TABLE usage_buckets ADD COLUMN origin_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_buckets ADD COLUMN address_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_endpoint_buckets ADD COLUMN origin_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_endpoint_buckets ADD COLUMN address_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_customer_buckets ADD COLUMN origin_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_customer_buckets ADD COLUMN address_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_route_buckets ADD COLUMN origin_not_allowed bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_route_buckets ADD COLUMN address_not_allowed bigint NOT NULL DEFAULT 0;
