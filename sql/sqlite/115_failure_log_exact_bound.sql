-- The failure log's bound of 100 entries per key per minute, decided where batches are applied
-- (docs/decisions/0115-failure-log-bound-across-replicas.md): how many entries of a key's minute were
-- offered to the log so far, across every replica's batches. A batch takes its upsert's row lock, so
-- batches applied at once by two replicas count one after the other; pruned with the log.
CREATE TABLE failure_offered (
  key_id    text NOT NULL,
  minute_ms bigint NOT NULL,
  offered   bigint NOT NULL,
  PRIMARY KEY (key_id, minute_ms)
);
CREATE INDEX failure_offered_minute ON failure_offered (minute_ms);
