import { bearer, servicePath, type ExportFormat } from '../usage-send.js';
import { cloudEvent, CLOUDEVENTS_CONTENT_TYPE } from './cloudevents.js';

/**
 * OpenMeter's event ingestion, `POST {url}/api/v1/events`, one CloudEvent as
 * `application/cloudevents+json`; OpenMeter dedupes by `id` and `source`. A meter with `eventType` the
 * export's eventName and `valueProperty` `$.value` sums the units per subject (the customer).
 */
export const openMeterFormat: ExportFormat = {
  request: (target, send) => ({
    url: servicePath(target.url, '/api/v1/events'),
    headers: { 'content-type': CLOUDEVENTS_CONTENT_TYPE, ...bearer(target.credential) },
    body: JSON.stringify(cloudEvent(target, send)),
  }),
};
