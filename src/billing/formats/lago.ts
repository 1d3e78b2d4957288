import { bearer, servicePath, type ExportFormat } from '../usage-send.js';

/**
 * Lago's usage events, `POST {url}/api/v1/events` with the API key as bearer:
 * `{event: {transaction_id, external_subscription_id, code, timestamp, properties}}`; the customer is the
 * subscription's external id, `code` the billable metric's, `properties.value` the units (a `sum_agg`
 * metric on field `value` adds them up), `timestamp` the bucket's start in seconds.
 */
export const lagoFormat: ExportFormat = {
  request: (target, send) => ({
    url: servicePath(target.url, '/api/v1/events'),
    headers: { 'content-type': 'application/json', ...bearer(target.credential) },
    body: JSON.stringify({
      event: {
        transaction_id: send.idempotencyId,
        external_subscription_id: send.customer,
        code: target.eventName,
        timestamp: Math.floor(send.bucketStartMs / 1000),
        properties: { value: send.units },
      },
    }),
  }),
  // Lago refuses a transaction_id it already holds with 422 `transaction_id: ["value_already_exist"]`.
  alreadyHeld: (status, body) =>
    status === 422 && /"transaction_id"\s*:\s*\[\s*"value_already_exist"\s*\]/.test(body),
};
