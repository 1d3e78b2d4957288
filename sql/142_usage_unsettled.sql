-- Usage counts the requests whose response reported no units readable by its plan's `settle`
-- (docs/guides/usage-priced-apis.md): each charged its reservation. Totals by endpoint and every bucket
-- table carry the count; rows written before keep 0.
ALTER TABLE usage_endpoints ADD COLUMN unsettled bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_buckets ADD COLUMN unsettled bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_endpoint_buckets ADD COLUMN unsettled bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_customer_buckets ADD COLUMN unsettled bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_route_buckets ADD COLUMN unsettled bigint NOT NULL DEFAULT 0;
