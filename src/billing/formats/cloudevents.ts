import { bearer, single, type ExportFormat, type ExportTarget, type UsageSend } from '../usage-send.js';

export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json';

/**
 * A CloudEvents 1.0 event in the structured JSON mode: `id` is the idempotency id, unique with its
 * `source` (the export); `subject` the customer; `time` the bucket's start; `data.value` the units.
 */
export function cloudEvent(target: ExportTarget, send: UsageSend): Record<string, unknown> {
  return {
    specversion: '1.0',
    id: send.idempotencyId,
    source: `tollgate/billing-exports/${target.exportId}`,
    type: target.eventName,
    subject: send.customer,
    time: new Date(send.bucketStartMs).toISOString(),
    datacontenttype: 'application/json',
    data: {
      value: send.units,
      [send.subject === 'key' ? 'keyId' : 'consumerId']: send.subjectId,
      bucketStart: new Date(send.bucketStartMs).toISOString(),
      bucketEnd: new Date(send.bucketEndMs).toISOString(),
      revision: send.revision,
    },
  };
}

/** Plain CloudEvents over HTTP: one structured event POSTed to the configured URL as it is. */
export const cloudEventsFormat: ExportFormat = {
  batchSize: 1,
  request: (target, sends) => ({
    url: target.url,
    headers: { 'content-type': CLOUDEVENTS_CONTENT_TYPE, ...bearer(target.credential) },
    body: JSON.stringify(cloudEvent(target, single(sends))),
  }),
};
