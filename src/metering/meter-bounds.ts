import { SETTLE_MAX_DEFAULT } from './reading.js';

/** How far a meter reads; past a bound it stops and the response is unsettled (`too-large`). */
export interface MeterBounds {
  /** The cost entry's `settleMax`: units above it are cut to it. */
  settleMax: number;
  /** The bytes of a plain JSON response read at most. */
  jsonMaxBytes: number;
  /** The bytes of `data:` one event of a stream may carry. */
  eventMaxBytes: number;
}

// Figures and reasons: docs/decisions/0170-reading-the-units-beside-the-stream.md, and for the JSON
// bound docs/decisions/0234-a-json-answer-is-read-up-to-64-mib.md (a batch of embeddings fits).
export const METER_BOUNDS_DEFAULT: MeterBounds = {
  settleMax: SETTLE_MAX_DEFAULT,
  jsonMaxBytes: 64 * 1024 * 1024,
  eventMaxBytes: 1024 * 1024,
};
