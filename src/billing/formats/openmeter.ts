import { bearer, servicePath, type ExportFormat } from '../usage-send.js';
import { cloudEvent } from './cloudevents.js';

/** OpenMeter's event ingestion takes at most this many events a request. */
const BATCH_SIZE = 100;

/**
 * OpenMeter's event ingestion, `POST {url}/api/v1/events`: up to 100 CloudEvents as one JSON array,
 * `application/cloudevents-batch+json`; OpenMeter dedupes each by `id` and `source`. A meter with
 * `eventType` the export's eventName and `valueProperty` `$.value` sums the units per subject (the customer).
 */
export const openMeterFormat: ExportFormat = {
  batchSize: BATCH_SIZE,
  request: (target, sends) => ({
    url: servicePath(target.url, '/api/v1/events'),
    headers: { 'content-type': 'application/cloudevents-batch+json', ...bearer(target.credential) },
    body: JSON.stringify(sends.map((send) => cloudEvent(target, send))),
  }),
};
