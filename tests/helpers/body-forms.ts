/**
 * One JSON text sent in the forms backends read besides plain UTF-8 (docs/decisions/0240): another
 * Unicode encoding, with or without a byte order mark, content codings, one or two, and a plain body that
 * names one. `readBy` names the backends that read each form: Python's `json.loads` of the bytes (FastAPI
 * and the model servers on it) tells the encodings apart by themselves; Express' `express.json()` decodes
 * content codings, strips a mark and reads another UTF only when the content type names it.
 */
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';

export type Backend = 'python' | 'express';

export interface BodyForm {
  readonly name: string;
  /** Header fields that go with it besides `content-type: application/json`. */
  readonly headers: Readonly<Record<string, string>>;
  /** The charset its content type names, for a backend that reads only what it is told. */
  readonly charset?: string;
  readonly bytes: (text: string) => Buffer;
  readonly readBy: readonly Backend[];
}

const MARK = '\ufeff';

/** UTF-16 big-endian: Buffer has only little-endian. */
function utf16be(text: string): Buffer {
  return Buffer.from(text, 'utf16le').swap16();
}

function utf32(text: string, littleEndian: boolean): Buffer {
  const points = [...text].map((char) => char.codePointAt(0)!);
  const bytes = Buffer.alloc(points.length * 4);
  points.forEach((point, i) =>
    littleEndian ? bytes.writeUInt32LE(point, i * 4) : bytes.writeUInt32BE(point, i * 4),
  );
  return bytes;
}

const utf8 = (text: string) => Buffer.from(text, 'utf8');

function encodings(): BodyForm[] {
  const forms: BodyForm[] = [
    {
      name: 'UTF-8 after a byte order mark',
      headers: {},
      bytes: (t) => utf8(MARK + t),
      readBy: ['python', 'express'],
    },
  ];
  const others: [string, string, (text: string) => Buffer][] = [
    ['UTF-16LE', 'utf-16le', (t) => Buffer.from(t, 'utf16le')],
    ['UTF-16BE', 'utf-16be', utf16be],
    ['UTF-32LE', 'utf-32le', (t) => utf32(t, true)],
    ['UTF-32BE', 'utf-32be', (t) => utf32(t, false)],
  ];
  for (const [name, charset, encode] of others) {
    forms.push({ name, headers: {}, bytes: encode, readBy: ['python'] });
    forms.push({
      name: `${name} after a byte order mark`,
      headers: {},
      bytes: (t) => encode(MARK + t),
      readBy: ['python'],
    });
    forms.push({
      name: `${name}, its content type saying so`,
      headers: {},
      charset,
      bytes: encode,
      readBy: ['python', 'express'],
    });
  }
  return forms;
}

function codings(): BodyForm[] {
  const coded = (name: string, encoding: string, code: (bytes: Buffer) => Buffer): BodyForm => ({
    name,
    headers: { 'content-encoding': encoding },
    bytes: (t) => code(utf8(t)),
    readBy: ['express'],
  });
  return [
    coded('gzip', 'gzip', gzipSync),
    // HTTP's old name of gzip (RFC 9110), which Express does not take.
    { ...coded('x-gzip', 'x-gzip', gzipSync), readBy: [] },
    coded('deflate', 'deflate', deflateSync),
    coded('br', 'br', brotliCompressSync),
    coded('zstd', 'zstd', zstdCompressSync),
    { ...coded('gzip, then br', 'gzip, br', (bytes) => brotliCompressSync(gzipSync(bytes))), readBy: [] },
    // Plain, naming a coding: Python ignores the field.
    ...['gzip', 'br', 'zstd', 'compress'].map((encoding) => ({
      ...coded(`plain, said to be ${encoding}`, encoding, (bytes: Buffer) => bytes),
      readBy: ['python' as const],
    })),
  ];
}

export const BODY_FORMS: readonly BodyForm[] = [...encodings(), ...codings()];

/** The content type a form is sent with. */
export function contentTypeOf(form: BodyForm): string {
  return form.charset === undefined ? 'application/json' : `application/json; charset=${form.charset}`;
}
