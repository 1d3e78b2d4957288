/**
 * The one rule for a customer id, wherever it enters (the customer-id header, a token's `sub`, verify's
 * `customerId`, a portal token's `subject`) and wherever it is kept (decision record 0145): no control character, since the id reaches the backend in a header and usage in the
 * database (which refuses a NUL), and its length counted in Unicode code points, as JSON Schema's
 * `maxLength` counts, so what the portal mints the proxy takes.
 */
import { hasNoControlCharacter, NO_CONTROL_CHARACTER_PATTERN } from './clean-text.js';

/** The longest customer id a token carries; a longer header value is cut to it for usage. */
export const MAX_CUSTOMER_ID_LENGTH = 200;

/** The rule as a JSON Schema `pattern`: no control character (clean-text.ts). */
export const CUSTOMER_ID_PATTERN = NO_CONTROL_CHARACTER_PATTERN;

/** Whether `id` holds no control character. */
export const isCleanCustomerId = hasNoControlCharacter;

/** How many Unicode code points `text` holds (a surrogate pair is one). */
export function codePointLength(text: string): number {
  let length = 0;
  for (const _ of text) length++;
  return length;
}

/** A customer id cut to MAX_CUSTOMER_ID_LENGTH code points (never between the halves of a surrogate pair). */
export function cutCustomerId(id: string): string {
  // Each code point is one or two UTF-16 units: one this short needs no counting.
  if (id.length <= MAX_CUSTOMER_ID_LENGTH) return id;
  let units = 0;
  let points = 0;
  for (const point of id) {
    if (points === MAX_CUSTOMER_ID_LENGTH) return id.slice(0, units);
    units += point.length;
    points++;
  }
  return id;
}

/**
 * The customer id usage keeps of one a request carried: cut to MAX_CUSTOMER_ID_LENGTH, and none when it
 * holds a control character (the proxy refuses such a request, but usage still counts the refusal).
 */
export const keptCustomerId = (id: string | undefined): string | undefined =>
  id === undefined || !isCleanCustomerId(id) ? undefined : cutCustomerId(id);
