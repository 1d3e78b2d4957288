-- sql/086 for the embedded store. The failure log (docs/decisions/0084-failure-log.md, docs/guides/failures.md): which of a key's
-- requests failed, when and why. Rows are added with the usage batch that carried them, in its
-- transaction, so a batch applied once adds them once; pruned after FAILURE_LOG_RETENTION_DAYS.
-- Times are epoch ms, the same in both stores. consumer_id '' is no consumer, as in the usage tables.
CREATE TABLE failure_log (
  seq            integer PRIMARY KEY AUTOINCREMENT,
  at_ms          bigint NOT NULL,
  request_id     text NOT NULL,
  key_id         text NOT NULL,
  consumer_id    text NOT NULL DEFAULT '',
  method         text NOT NULL,
  path           text NOT NULL,
  route_id       text,
  status         integer NOT NULL,
  code           text NOT NULL,
  limit_rule     text,
  client_address text,
  customer_id    text,
  duration_ms    double precision NOT NULL
);
CREATE INDEX failure_log_key ON failure_log (key_id, at_ms, seq);
CREATE INDEX failure_log_consumer ON failure_log (consumer_id, at_ms, seq);
CREATE INDEX failure_log_at ON failure_log (at_ms, seq);
CREATE INDEX failure_log_request ON failure_log (request_id);

-- Failures past the per-key-per-minute bound, counted by minute and code instead of kept.
CREATE TABLE failure_left_out (
  key_id      text NOT NULL,
  consumer_id text NOT NULL DEFAULT '',
  minute_ms   bigint NOT NULL,
  code        text NOT NULL,
  left_out    bigint NOT NULL,
  PRIMARY KEY (key_id, consumer_id, minute_ms, code)
);
CREATE INDEX failure_left_out_minute ON failure_left_out (minute_ms);
