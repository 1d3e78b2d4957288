/**
 * Text from a request that reaches storage, a log, an event or a header holds no control character:
 * the database refuses a NUL, and CR or LF would split a header or a log line.
 */

/** The rule as a JSON Schema `pattern` (read with the `u` flag): no U+0000–U+001F, no U+007F. */
export const NO_CONTROL_CHARACTER_PATTERN = '^[^\\u0000-\\u001f\\u007f]*$';

const CLEAN = new RegExp(NO_CONTROL_CHARACTER_PATTERN, 'u');

/** Whether `text` holds no control character. */
export const hasNoControlCharacter = (text: string): boolean => CLEAN.test(text);
