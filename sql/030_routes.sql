-- The route table (contract section 15): which requests go to which backend. A request takes the
-- route of the longest path prefix whose host and methods match it (src/routes/route-index.ts); the
-- management API refuses a route with the same host and prefix as another and a method in common,
-- under a lock, since no index can say that.
CREATE TABLE routes (
  route_id     text PRIMARY KEY,
  -- Lower case: `api.example.com`, or `*.example.com` for every host under it; null: every host.
  host         text,
  -- `/`, or whole segments without a trailing slash: `/v1/search`.
  path_prefix  text NOT NULL,
  -- Space-separated, e.g. 'GET HEAD'; null: every method.
  methods      text,
  upstream_url text NOT NULL,
  strip_prefix boolean NOT NULL DEFAULT false,
  -- null: UPSTREAM_TIMEOUT_MS.
  timeout_ms   integer CHECK (timeout_ms BETWEEN 1 AND 3600000),
  created_at   timestamptz NOT NULL,
  last_updated timestamptz NOT NULL
);
-- The list, and the table each replica loads, are ordered by creation time, then id.
CREATE INDEX routes_created_at_id ON routes (created_at, route_id);
