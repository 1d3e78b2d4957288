import { bearer, servicePath, type EventVerdict, type ExportFormat } from '../usage-send.js';

/** Lago's batch endpoint takes at most this many events a request. */
const BATCH_SIZE = 100;

/**
 * Lago's usage events in batches, `POST {url}/api/v1/events/batch` with the API key as bearer:
 * `{events: [{transaction_id, external_subscription_id, code, timestamp, properties}]}`, up to 100; the
 * customer is the subscription's external id, `code` the billable metric's, `properties.value` the units
 * (a `sum_agg` metric on field `value` adds them up), `timestamp` the bucket's start in seconds.
 */
export const lagoFormat: ExportFormat = {
  batchSize: BATCH_SIZE,
  request: (target, sends) => ({
    url: servicePath(target.url, '/api/v1/events/batch'),
    headers: { 'content-type': 'application/json', ...bearer(target.credential) },
    body: JSON.stringify({
      events: sends.map((send) => ({
        transaction_id: send.idempotencyId,
        external_subscription_id: send.customer,
        code: target.eventName,
        timestamp: Math.floor(send.bucketStartMs / 1000),
        properties: { value: send.units },
      })),
    }),
  }),
  verdicts: lagoVerdicts,
};

/**
 * Lago refuses a batch with 422 `validation_errors` whose `error_details` name each failing event by its
 * index: `{"0": {"transaction_id": ["value_already_exist"]}}` says it holds that event already; any other
 * error refuses the event. Lago stores none of a batch it refuses, so an event it does not name was not
 * taken and is sent again without the others.
 */
function lagoVerdicts(status: number, body: string, count: number): EventVerdict[] | undefined {
  if (status !== 422) return undefined;
  let details: unknown;
  try {
    details = (JSON.parse(body) as { error_details?: unknown }).error_details;
  } catch {
    return undefined;
  }
  if (typeof details !== 'object' || details === null) return undefined;
  const byIndex = details as Record<string, unknown>;
  if (!Object.keys(byIndex).every((k) => /^\d+$/.test(k) && Number(k) < count)) return undefined;
  return Array.from({ length: count }, (_, i): EventVerdict => {
    const errors = byIndex[String(i)];
    if (errors === undefined) return { kind: 'untaken' };
    const duplicate = JSON.stringify(errors) === JSON.stringify({ transaction_id: ['value_already_exist'] });
    return duplicate ? { kind: 'held' } : { kind: 'refused', error: `HTTP 422: ${JSON.stringify(errors)}` };
  });
}
