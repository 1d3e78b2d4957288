-- A single node's usage-priced requests still in flight after a moment (src/reservations/in-flight.ts):
-- each record is taken out when its request ends; what a killed process left here is counted at the
-- next start, at its reservation, as unsettled. Replicas on Redis keep these records in Redis instead.
CREATE TABLE in_flight_requests (
  id text PRIMARY KEY,
  holder text NOT NULL,
  body text NOT NULL
);
