-- sql/030 for the embedded store: the route table (contract section 15).
CREATE TABLE routes (
  route_id     text PRIMARY KEY NOT NULL,
  -- Lower case: `api.example.com`, or `*.example.com` for every host under it; null: every host.
  host         text,
  -- `/`, or whole segments without a trailing slash: `/v1/search`.
  path_prefix  text NOT NULL,
  -- Space-separated, e.g. 'GET HEAD'; null: every method.
  methods      text,
  upstream_url text NOT NULL,
  strip_prefix boolean NOT NULL DEFAULT 0 CHECK (strip_prefix IN (0, 1)),
  -- null: UPSTREAM_TIMEOUT_MS.
  timeout_ms   integer CHECK (timeout_ms BETWEEN 1 AND 3600000),
  created_at   timestamptz NOT NULL,
  last_updated timestamptz NOT NULL
);
CREATE INDEX routes_created_at_id ON routes (created_at, route_id);
