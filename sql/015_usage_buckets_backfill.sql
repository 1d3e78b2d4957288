-- Usage counted before the buckets existed (sql/012) is in the totals only, so a key's buckets add up
-- to less than its totals. When it happened was not recorded; all that is certain is that it lies
-- between the key's creation and now. So the missing part (totals less the key's month buckets, which
-- no retention has pruned yet for such usage) is filed only in the buckets of now that also hold the
-- key's creation: there, and only there, its time is known. Keys created before those buckets keep
-- the difference in their totals only (README "Usage and billing", decision record 0012).

WITH totals AS (
  SELECT key_id, sum(requests) AS requests, sum(successful) AS successful, sum(failed) AS failed, sum(total_duration_ms) AS total_duration_ms
  FROM usage_endpoints GROUP BY key_id
), bucketed AS (
  SELECT key_id, sum(requests) AS requests, sum(successful) AS successful, sum(failed) AS failed, sum(total_duration_ms) AS total_duration_ms
  FROM usage_buckets WHERE granularity = 'month' GROUP BY key_id
)
INSERT INTO usage_buckets (key_id, granularity, start, requests, successful, failed, rate_limited, total_duration_ms)
SELECT t.key_id, g.granularity, date_trunc(g.granularity, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
       t.requests - coalesce(b.requests, 0), t.successful - coalesce(b.successful, 0), t.failed - coalesce(b.failed, 0), 0,
       greatest(0, t.total_duration_ms - coalesce(b.total_duration_ms, 0))
FROM totals t
JOIN api_keys k ON k.id = t.key_id
LEFT JOIN bucketed b ON b.key_id = t.key_id
CROSS JOIN (VALUES ('minute'), ('hour'), ('day'), ('month')) AS g (granularity)
WHERE t.requests > coalesce(b.requests, 0)
  AND date_trunc(g.granularity, k.created_at AT TIME ZONE 'UTC') = date_trunc(g.granularity, now() AT TIME ZONE 'UTC')
ON CONFLICT (key_id, granularity, start) DO UPDATE SET
  requests = usage_buckets.requests + excluded.requests,
  successful = usage_buckets.successful + excluded.successful,
  failed = usage_buckets.failed + excluded.failed,
  total_duration_ms = usage_buckets.total_duration_ms + excluded.total_duration_ms;

-- The same for each endpoint and each customer of such a key, in its day and month series.
WITH bucketed AS (
  SELECT key_id, endpoint, sum(requests) AS requests, sum(successful) AS successful, sum(failed) AS failed, sum(total_duration_ms) AS total_duration_ms
  FROM usage_endpoint_buckets WHERE granularity = 'month' GROUP BY key_id, endpoint
)
INSERT INTO usage_endpoint_buckets (key_id, granularity, start, endpoint, requests, successful, failed, rate_limited, total_duration_ms)
SELECT e.key_id, g.granularity, date_trunc(g.granularity, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', e.endpoint,
       e.requests - coalesce(b.requests, 0), e.successful - coalesce(b.successful, 0), e.failed - coalesce(b.failed, 0), 0,
       greatest(0, e.total_duration_ms - coalesce(b.total_duration_ms, 0))
FROM usage_endpoints e
JOIN api_keys k ON k.id = e.key_id
LEFT JOIN bucketed b ON b.key_id = e.key_id AND b.endpoint = e.endpoint
CROSS JOIN (VALUES ('day'), ('month')) AS g (granularity)
WHERE e.requests > coalesce(b.requests, 0)
  AND date_trunc(g.granularity, k.created_at AT TIME ZONE 'UTC') = date_trunc(g.granularity, now() AT TIME ZONE 'UTC')
ON CONFLICT (key_id, granularity, start, endpoint) DO UPDATE SET
  requests = usage_endpoint_buckets.requests + excluded.requests,
  successful = usage_endpoint_buckets.successful + excluded.successful,
  failed = usage_endpoint_buckets.failed + excluded.failed,
  total_duration_ms = usage_endpoint_buckets.total_duration_ms + excluded.total_duration_ms;

WITH bucketed AS (
  SELECT key_id, customer_id, sum(requests) AS requests, sum(successful) AS successful, sum(failed) AS failed
  FROM usage_customer_buckets WHERE granularity = 'month' GROUP BY key_id, customer_id
)
INSERT INTO usage_customer_buckets (key_id, granularity, start, customer_id, requests, successful, failed, rate_limited, total_duration_ms)
SELECT c.key_id, g.granularity, date_trunc(g.granularity, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', c.customer_id,
       c.requests - coalesce(b.requests, 0), c.successful - coalesce(b.successful, 0), c.failed - coalesce(b.failed, 0), 0, 0
FROM usage_customers c
JOIN api_keys k ON k.id = c.key_id
LEFT JOIN bucketed b ON b.key_id = c.key_id AND b.customer_id = c.customer_id
CROSS JOIN (VALUES ('day'), ('month')) AS g (granularity)
WHERE c.requests > coalesce(b.requests, 0)
  AND date_trunc(g.granularity, k.created_at AT TIME ZONE 'UTC') = date_trunc(g.granularity, now() AT TIME ZONE 'UTC')
ON CONFLICT (key_id, granularity, start, customer_id) DO UPDATE SET
  requests = usage_customer_buckets.requests + excluded.requests,
  successful = usage_customer_buckets.successful + excluded.successful,
  failed = usage_customer_buckets.failed + excluded.failed;
