/**
 * A response body in a content coding (`Content-Encoding: gzip`, `deflate`, `br`, `zstd`): the client
 * gets its bytes as they came, and the meter reads them decoded. The official clients ask for gzip
 * (`Accept-Encoding: gzip, deflate`), and backends that honour it would otherwise leave every answer
 * unread, charged at its reservation. Decoding is synchronous (minizlib drives Node's own zlib), so a
 * meter still reads each chunk on the turn it is given, and its reading is ready when the response ends.
 * An answer is decoded only so far beyond its coded size (a decompression bomb: a few hundred bytes of
 * `br` decode to gigabytes), so that no answer stalls the process or fills its memory.
 */
import type { ZlibOptions as NodeZlibOptions } from 'node:zlib';
import { BrotliDecompress, Unzip, ZstdDecompress, constants } from 'minizlib';
import { contentCodings, type CodingFormat } from './content-codings.js';
import { unsettled, type Reading } from './reading.js';
import type { HeaderBag, UnitMeter } from './unit-meter.js';

type Stream = Unzip | BrotliDecompress | ZstdDecompress;

/**
 * How a coding is undone: `Unzip` takes gzip or zlib-wrapped deflate. Its decoders are kept for the
 * next answers once reset: making one costs several times what decoding a small answer does.
 */
class Coding {
  private readonly idle: Decoder[] = [];

  constructor(
    private readonly make: () => Stream,
    /** The flush that ends a coded body, and fails when its bytes stop short of that end. */
    readonly finish: number,
  ) {}

  take(into: UnitMeter): Decoder {
    const decoder = this.idle.pop() ?? new Decoder(this.make(), this);
    decoder.serve(into);
    return decoder;
  }

  /** Takes back a decoder done with its answer; one that failed, or past the idle ones kept, is closed. */
  give(decoder: Decoder): void {
    decoder.serve(undefined);
    if (decoder.stream.sawError || this.idle.length >= IDLE_KEPT) return decoder.stream.close();
    decoder.stream.reset();
    this.idle.push(decoder);
  }
}

/** The idle decoders kept per coding: as many as answers decoded at once on a busy replica, about. */
const IDLE_KEPT = 32;

/**
 * An answer decodes to at most this many times its coded bytes, past its first `DECODED_FREE_BYTES`:
 * far above what text and JSON compress by, far below what a decompression bomb decodes to.
 */
const DECODED_PER_CODED = 256;
const DECODED_FREE_BYTES = 1024 * 1024;
/**
 * What one chunk decodes to at most, all of it made in one call before any is read (zlib's
 * `maxOutputLength`): as much as the ratio allows a chunk of a socket's read (64 KiB).
 */
const CHUNK_DECODED_MAX_BYTES = DECODED_FREE_BYTES + DECODED_PER_CODED * 64 * 1024;

/** A decoder's options, made for each (minizlib writes its own into them, and hands them to Node's zlib). */
const bounded = (): NodeZlibOptions => ({ maxOutputLength: CHUNK_DECODED_MAX_BYTES });

const CODINGS: Readonly<Record<CodingFormat, Coding>> = {
  zlib: new Coding(() => new Unzip(bounded()), constants.Z_FINISH),
  br: new Coding(() => new BrotliDecompress(bounded()), constants.BROTLI_OPERATION_FINISH),
  zstd: new Coding(() => new ZstdDecompress(bounded()), constants.ZSTD_e_end),
};

/** One decoder and the meter its decoded bytes go to, while it serves an answer. */
class Decoder {
  private into: UnitMeter | undefined = undefined;
  /** The coded bytes of its answer written so far, and the decoded bytes made of them. */
  private coded = 0;
  private decoded = 0;
  /** Its answer decoded past the bound: nothing more of it is decoded or read. */
  tooLarge = false;

  constructor(
    readonly stream: Stream,
    readonly coding: Coding,
  ) {
    stream.on('data', (chunk: Buffer) => {
      this.decoded += chunk.length;
      if (this.decoded > DECODED_FREE_BYTES + DECODED_PER_CODED * this.coded) this.tooLarge = true;
      if (!this.tooLarge) this.into?.write(chunk);
    });
    // Bytes not in its coding, or a chunk decoding past its bound: it decodes nothing more
    // (`sawError`), and is not kept.
    stream.on('error', (err: unknown) => {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') this.tooLarge = true;
    });
  }

  /** Starts on another answer. */
  serve(into: UnitMeter | undefined): void {
    this.into = into;
    this.coded = 0;
    this.decoded = 0;
    this.tooLarge = false;
  }

  /** Decodes the answer's next coded bytes, unless it is past its bound. */
  write(chunk: Uint8Array): void {
    if (this.tooLarge) return;
    this.coded += chunk.byteLength;
    // A stream that met bytes not in its coding ignores the rest (minizlib).
    this.stream.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
}

/**
 * `meter` reading the body of a response with this `Content-Encoding` (codings in the order they were
 * applied): unchanged without one, or for `identity`; a coding Tollgate cannot decode, or more codings
 * than it undoes (src/metering/content-codings.ts), leaves the response unread (`malformed`).
 */
export function decodedMeter(meter: UnitMeter, contentEncoding: HeaderBag[string]): UnitMeter {
  const codings = contentCodings(contentEncoding);
  if (codings === undefined) return UNREADABLE;
  // The last coding applied is the first undone: each wraps the meters of the codings before it.
  return codings.reduce<UnitMeter>((decoded, coding) => new DecodingMeter(decoded, CODINGS[coding]), meter);
}

class DecodingMeter implements UnitMeter {
  private readonly decoder: Decoder;

  constructor(
    private readonly decoded: UnitMeter,
    coding: Coding,
  ) {
    this.decoder = coding.take(decoded);
  }

  write(chunk: Uint8Array): void {
    this.decoder.write(chunk);
  }

  end(ending: { complete: boolean; trailers?: HeaderBag }): Reading {
    const decoder = this.decoder;
    // A coded body that stops short of its end fails here, as a JSON body cut short does.
    if (ending.complete && !decoder.tooLarge) decoder.stream.flush(decoder.coding.finish);
    const { tooLarge } = decoder;
    const failed = decoder.stream.sawError;
    decoder.coding.give(decoder);
    const reading = this.decoded.end(ending);
    if (!ending.complete) return reading;
    return tooLarge ? unsettled('too-large') : failed ? unsettled('malformed') : reading;
  }
}

/** A body in a coding Tollgate does not decode. */
const UNREADABLE: UnitMeter = {
  write: () => undefined,
  end: ({ complete }) => unsettled(complete ? 'malformed' : 'cut-short'),
};
