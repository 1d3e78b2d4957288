/**
 * The text of a JSON body in whichever Unicode encoding it came: UTF-8, UTF-16 or UTF-32, with or
 * without a byte order mark (left out of the text). JSON sent over a network must be UTF-8 (RFC 8259),
 * but backends read the others: Python's `json.loads` of bytes (FastAPI, and the model servers built
 * on it) tells them apart as below, and Express' `express.json()` strips the mark. A body read to
 * decide on it must be read as its backend reads it (docs/decisions/0240).
 */
export function jsonText(bytes: Buffer): string {
  const [encoding, markLength] = encodingOf(bytes);
  const text = bytes.subarray(markLength);
  // UTF-8, what clients send, by Buffer's own decoder. The mark is left out above, once: a second one
  // stays in the text, as Python keeps it.
  if (encoding === 'utf-8') return text.toString('utf8');
  if (encoding === 'utf-32le' || encoding === 'utf-32be') return utf32(text, encoding === 'utf-32le');
  return new TextDecoder(encoding, { ignoreBOM: true }).decode(text);
}

type Encoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'utf-32le' | 'utf-32be';

/**
 * By its byte order mark, else by where its first bytes are zero (a JSON text starts with an ASCII
 * character): Python's `json.detect_encoding`, to the byte.
 */
function encodingOf(b: Buffer): [Encoding, number] {
  if (startsWith(b, 0xff, 0xfe, 0x00, 0x00)) return ['utf-32le', 4];
  if (startsWith(b, 0x00, 0x00, 0xfe, 0xff)) return ['utf-32be', 4];
  if (startsWith(b, 0xff, 0xfe)) return ['utf-16le', 2];
  if (startsWith(b, 0xfe, 0xff)) return ['utf-16be', 2];
  if (startsWith(b, 0xef, 0xbb, 0xbf)) return ['utf-8', 3];
  if (b.length >= 4) {
    if (b[0] === 0) return [b[1] === 0 ? 'utf-32be' : 'utf-16be', 0];
    if (b[1] === 0) return [b[2] === 0 && b[3] === 0 ? 'utf-32le' : 'utf-16le', 0];
  } else if (b.length === 2) {
    if (b[0] === 0) return ['utf-16be', 0];
    if (b[1] === 0) return ['utf-16le', 0];
  }
  return ['utf-8', 0];
}

function startsWith(bytes: Buffer, ...prefix: number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((byte, i) => bytes[i] === byte);
}

/** UTF-32, which `TextDecoder` does not decode: a code point that is none, or bytes left over, is U+FFFD. */
function utf32(bytes: Buffer, littleEndian: boolean): string {
  const points: number[] = [];
  for (let i = 0; i + 4 <= bytes.length; i += 4) {
    const point = littleEndian ? bytes.readUInt32LE(i) : bytes.readUInt32BE(i);
    points.push(point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff) ? 0xfffd : point);
  }
  if (bytes.length % 4 !== 0) points.push(0xfffd);
  let text = '';
  // In slices: spreading a million arguments into one call overflows the stack.
  for (let i = 0; i < points.length; i += 8192) text += String.fromCodePoint(...points.slice(i, i + 8192));
  return text;
}
