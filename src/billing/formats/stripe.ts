import { bearer, servicePath, single, type ExportFormat } from '../usage-send.js';

/**
 * Stripe's billing meter events, `POST {url}/v1/billing/meter_events`, form-encoded with the secret key
 * as bearer: `event_name` (the meter's), `payload[stripe_customer_id]`, `payload[value]` (the units),
 * `identifier` (Stripe enforces its uniqueness over at least 24 hours) and `timestamp` (the bucket's
 * start, in seconds). The same id goes in `Idempotency-Key`, so a retry whose first answer was lost is
 * answered as the first was. One event a request: Stripe's v1 API takes no batches (stripe-v2 does).
 */
export const stripeFormat: ExportFormat = {
  batchSize: 1,
  request: (target, sends) => {
    const send = single(sends);
    return {
      url: servicePath(target.url, '/v1/billing/meter_events'),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'idempotency-key': send.idempotencyId,
        ...bearer(target.credential),
      },
      body: new URLSearchParams({
        event_name: target.eventName,
        'payload[stripe_customer_id]': send.customer,
        'payload[value]': String(send.units),
        identifier: send.idempotencyId,
        timestamp: String(Math.floor(send.bucketStartMs / 1000)),
      }).toString(),
    };
  },
};
