/**
 * A response body in a content coding (`Content-Encoding: gzip`, `deflate`, `br`, `zstd`): the client
 * gets its bytes as they came, and the meter reads them decoded. The official clients ask for gzip
 * (`Accept-Encoding: gzip, deflate`), and backends that honour it would otherwise leave every answer
 * unread, charged at its reservation. Decoding is synchronous (minizlib drives Node's own zlib), so a
 * meter still reads each chunk on the turn it is given, and its reading is ready when the response ends.
 */
import { BrotliDecompress, Unzip, ZstdDecompress } from 'minizlib';
import { unsettled, type Reading } from './reading.js';
import type { HeaderBag, UnitMeter } from './unit-meter.js';

type Decoder = Unzip | BrotliDecompress | ZstdDecompress;

/** The codings read, by their registered names; `Unzip` takes gzip or zlib-wrapped deflate. */
const DECODERS: Readonly<Record<string, () => Decoder>> = {
  gzip: () => new Unzip({}),
  'x-gzip': () => new Unzip({}),
  deflate: () => new Unzip({}),
  br: () => new BrotliDecompress({}),
  zstd: () => new ZstdDecompress({}),
};

/**
 * `meter` reading the body of a response with this `Content-Encoding` (codings in the order they were
 * applied): unchanged without one, or for `identity`; a coding Tollgate cannot decode leaves the
 * response unread (`malformed`).
 */
export function decodedMeter(meter: UnitMeter, contentEncoding: HeaderBag[string]): UnitMeter {
  if (contentEncoding === undefined) return meter;
  const codings = String(contentEncoding)
    .toLowerCase()
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => coding !== 'identity' && coding !== '');
  if (!codings.every((coding) => Object.hasOwn(DECODERS, coding))) return UNREADABLE;
  // The last coding applied is the first undone: each wraps the meters of the codings before it.
  return codings.reduce<UnitMeter>(
    (decoded, coding) => new DecodingMeter(decoded, DECODERS[coding]!()),
    meter,
  );
}

class DecodingMeter implements UnitMeter {
  /** The bytes are not in the coding named: nothing more is decoded. */
  private failed = false;

  constructor(
    private readonly decoded: UnitMeter,
    private readonly decoder: Decoder,
  ) {
    decoder.on('data', (chunk: Buffer) => decoded.write(chunk));
    decoder.on('error', () => (this.failed = true));
  }

  write(chunk: Uint8Array): void {
    if (!this.failed) this.decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }

  end(ending: { complete: boolean; trailers?: HeaderBag }): Reading {
    // A coded body that stops short of its end fails here, as a JSON body cut short does.
    if (ending.complete && !this.failed) this.decoder.end();
    this.decoder.close();
    const reading = this.decoded.end(ending);
    return this.failed && ending.complete ? unsettled('malformed') : reading;
  }
}

/** A body in a coding Tollgate does not decode. */
const UNREADABLE: UnitMeter = {
  write: () => undefined,
  end: ({ complete }) => unsettled(complete ? 'malformed' : 'cut-short'),
};
