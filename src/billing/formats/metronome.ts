import { bearer, servicePath, type ExportFormat } from '../usage-send.js';

/** Metronome's ingest endpoint takes 1 to 100 events a request. */
const BATCH_SIZE = 100;

/**
 * Metronome's usage events, `POST {url}/v1/ingest` with the API token as bearer: a JSON array of
 * `{transaction_id, customer_id, event_type, timestamp, properties}`; `transaction_id` is the idempotency
 * id (Metronome ignores a repeated one for 34 days), `customer_id` the customer (a Metronome customer id
 * or ingest alias), `event_type` the export's eventName, `timestamp` the bucket's start (RFC 3339), and
 * `properties.value` the units, as a string as Metronome advises (its decimals are exact).
 */
export const metronomeFormat: ExportFormat = {
  batchSize: BATCH_SIZE,
  request: (target, sends) => ({
    url: servicePath(target.url, '/v1/ingest'),
    headers: { 'content-type': 'application/json', ...bearer(target.credential) },
    body: JSON.stringify(
      sends.map((send) => ({
        transaction_id: send.idempotencyId,
        customer_id: send.customer,
        event_type: target.eventName,
        timestamp: new Date(send.bucketStartMs).toISOString(),
        properties: {
          value: String(send.units),
          [send.subject === 'key' ? 'key_id' : 'consumer_id']: send.subjectId,
        },
      })),
    ),
  }),
};
