import { SETTLE_MAX_DEFAULT } from './reading.js';

/** How far a meter reads; past a bound it stops and the response is unsettled (`too-large`). */
export interface MeterBounds {
  /** The cost entry's `settleMax`: units above it are cut to it. */
  settleMax: number;
  /** The bytes of one JSON document read at most: a plain JSON response, or one event's `data:`. */
  documentMaxBytes: number;
}

/**
 * One JSON document read at most, a whole answer or one event's data alike: a batch of embeddings
 * answers one, and a Responses API stream's last event holds the whole response, generated images
 * included. Reasons: docs/decisions/0170-reading-the-units-beside-the-stream.md,
 * docs/decisions/0234-a-json-answer-is-read-up-to-64-mib.md and
 * docs/decisions/0237-an-event-is-read-as-far-as-a-json-answer.md.
 */
const JSON_DOCUMENT_MAX_BYTES = 64 * 1024 * 1024;

export const METER_BOUNDS_DEFAULT: MeterBounds = {
  settleMax: SETTLE_MAX_DEFAULT,
  documentMaxBytes: JSON_DOCUMENT_MAX_BYTES,
};
