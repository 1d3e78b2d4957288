import { bearer, servicePath, type ExportFormat } from '../usage-send.js';

/** Stripe's meter event stream takes at most this many events a request. */
const BATCH_SIZE = 100;
/** The API version the v2 requests name (Stripe's v2 endpoints are versioned by this header). */
export const STRIPE_V2_VERSION = '2025-08-27.preview';

/**
 * Stripe's v2 meter event stream, `POST {streamUrl}/v2/billing/meter_event_stream` with a session's
 * token as bearer (stripe-sessions.ts gets it with the secret key): `{events: [{event_name, identifier,
 * payload: {stripe_customer_id, value}, timestamp}]}`, up to 100 events; the payload's values are
 * strings, as Stripe requires, and `identifier` (unique over 24 hours for Stripe) the idempotency id.
 * The stream validates asynchronously: a 200 means Stripe accepted the events.
 */
export const stripeV2Format: ExportFormat = {
  batchSize: BATCH_SIZE,
  request: (target, sends, token) => ({
    url: servicePath(target.streamUrl, '/v2/billing/meter_event_stream'),
    headers: {
      'content-type': 'application/json',
      'stripe-version': STRIPE_V2_VERSION,
      ...bearer(token),
    },
    body: JSON.stringify({
      events: sends.map((send) => ({
        event_name: target.eventName,
        identifier: send.idempotencyId,
        payload: { stripe_customer_id: send.customer, value: String(send.units) },
        timestamp: new Date(send.bucketStartMs).toISOString(),
      })),
    }),
  }),
};
