/**
 * The two timestamp shapes of the OpenAPI document, both UTC and truncated to whole seconds. Stored times keep
 * their milliseconds; only the rendering drops them, so the same instant always prints the same way.
 */

let lastMs = NaN;
let lastText = '';

/**
 * `YYYY-MM-DDThh:mm:ssZ`: every timestamp of the management API but one. The last instant written is
 * remembered: verify writes the same window end for every call of a window.
 */
export function isoTimestamp(instant: Date | number): string {
  const ms = typeof instant === 'number' ? instant : instant.getTime();
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString().slice(0, 19) + 'Z';
    lastMs = ms;
  }
  return lastText;
}

/** `YYYY-MM-DD HH:MM:SS`: only the `createdAt` of the key-create response, as the spec shows it. */
export function createTimestamp(instant: Date | number): string {
  return new Date(instant).toISOString().slice(0, 19).replace('T', ' ');
}
