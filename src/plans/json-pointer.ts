/**
 * JSON pointers (RFC 6901), parsed once when a plan is read: `/usage/total_tokens` → `['usage',
 * 'total_tokens']`, with `~1` read as `/` and `~0` as `~` (in that order, so `~01` is `~1`).
 */
export type JsonPointer = readonly string[];

/** The pointer's reference tokens, or undefined when `text` is not a pointer. */
export function parsePointer(text: string): JsonPointer | undefined {
  if (text === '') return [];
  if (!text.startsWith('/')) return undefined;
  const tokens = text.slice(1).split('/');
  if (tokens.some((token) => /~(?![01])/.test(token))) return undefined;
  return tokens.map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** An array index as a pointer writes it: digits, no leading zero (`-`, the end, points at nothing). */
export const isArrayIndex = (token: string): boolean => /^(0|[1-9][0-9]*)$/.test(token);

/** The value `pointer` refers to in a parsed JSON document, or undefined when there is none. */
export function resolvePointer(document: unknown, pointer: JsonPointer): unknown {
  let value = document;
  for (const token of pointer) {
    if (Array.isArray(value)) {
      if (!isArrayIndex(token)) return undefined;
      value = value[Number(token)];
    } else if (typeof value === 'object' && value !== null && Object.hasOwn(value, token)) {
      value = (value as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return value;
}
