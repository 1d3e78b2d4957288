-- sql/150 for the embedded store: usage-priced requests still in flight after a moment, counted at the
-- next start when the process that wrote them was killed.
CREATE TABLE in_flight_requests (
  id text PRIMARY KEY NOT NULL,
  holder text NOT NULL,
  body text NOT NULL
);
