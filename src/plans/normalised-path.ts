/**
 * One spelling per path, so that what routes and limits match is what the backend receives
 * (docs/decisions/0065-normalised-paths.md): a percent-encoded unreserved character (A-Z a-z 0-9
 * `-` `.` `_` `~`) is decoded, every other percent-encoding keeps its escape with upper-case hex
 * (RFC 3986 §6.2.2.1 and §6.2.2.2). Neither changes what a backend's own decoder makes of the path.
 * A `%` not followed by two hex digits is left as it is, and so is the escape of a hex digit right
 * after it: decoded, the two would spell a new escape (`%%61` would become `%a`, and `%a0` a byte).
 */

/** The unreserved characters RFC 3986 §2.3 names: ALPHA / DIGIT / "-" / "." / "_" / "~". */
const UNRESERVED = /^[A-Za-z0-9._~-]$/;

/** Hex digit values by character code, -1 for other characters. */
const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX['0123456789ABCDEF'.charCodeAt(i)] = i;
  HEX['0123456789abcdef'.charCodeAt(i)] = i;
}

/** The value of the hex digit at `at`, or -1. */
function hexAt(path: string, at: number): number {
  const code = path.charCodeAt(at);
  return code < 128 ? HEX[code]! : -1;
}

const escapeOf = (byte: number): string => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;

/** What an escape becomes: the character for an unreserved one, the escape in upper case otherwise. */
const ESCAPES: readonly string[] = Array.from({ length: 256 }, (_, byte) => {
  const char = String.fromCharCode(byte);
  return UNRESERVED.test(char) ? char : escapeOf(byte);
});

/** Whether the escape at `at` follows a `%` or a `%` and a hex digit that are no escape of their own. */
const followsStrayPercent = (path: string, at: number): boolean =>
  path.charCodeAt(at - 1) === 37 /* % */ || (path.charCodeAt(at - 2) === 37 && hexAt(path, at - 1) !== -1);

/** `path` in its normal form; the same string when it holds no `%` (the common case costs one search). */
export function normalisedPath(path: string): string {
  let escape = path.indexOf('%');
  if (escape === -1) return path;
  let out = '';
  let copied = 0;
  while (escape !== -1) {
    const high = hexAt(path, escape + 1);
    const low = high === -1 ? -1 : hexAt(path, escape + 2);
    if (low === -1) {
      escape = path.indexOf('%', escape + 1);
      continue;
    }
    const byte = high * 16 + low;
    const isHexDigit = byte < 128 && HEX[byte] !== -1;
    const spelled = isHexDigit && followsStrayPercent(path, escape) ? escapeOf(byte) : ESCAPES[byte]!;
    out += path.slice(copied, escape) + spelled;
    copied = escape + 3;
    escape = path.indexOf('%', copied);
  }
  return copied === 0 ? path : out + path.slice(copied);
}
