/**
 * An export of spans as OTLP/protobuf bytes (`ExportTraceServiceRequest` of opentelemetry-proto),
 * written in one pass into one growing buffer. The SDK's serializer sizes the whole request in a first
 * pass and writes it in a second, converting every id to a new byte array in each; with every request
 * sampled that was the largest part of what tracing costs the proxy (docs/decisions/0126-spans-encoded-in-one-pass.md).
 * A batch holding what Tollgate never makes (events, links, attribute values other than strings,
 * numbers and booleans) goes to the SDK's serializer whole.
 */
import type { HrTime, AttributeValue, Attributes } from '@opentelemetry/api';
import {
  ProtobufTraceSerializer,
  type IExportTraceServiceResponse,
  type ISerializer,
} from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';

const LENGTH_DELIMITED = 2;
const VARINT = 0;
const FIXED64 = 1;
const FIXED32 = 5;
/** Span.flags: the W3C trace flags, plus "whether the parent is remote is known" and "it is". */
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;
const TWO_32 = 4_294_967_296;
/** About what a proxied request's SERVER span takes: a batch seldom grows its buffer. */
const BYTES_PER_SPAN = 384;

/** Not a value this encoder writes: the batch goes to the SDK's serializer. */
class Unsupported extends Error {}

/**
 * The byte of two hex digits, indexed by their character codes (seven bits each): ids are most of
 * what a span converts, and one lookup per pair is cheaper than arithmetic on each digit.
 */
const BYTE_OF_HEX_PAIR = (() => {
  const table = new Uint8Array(1 << 14);
  const digits = '0123456789abcdefABCDEF';
  for (const high of digits)
    for (const low of digits) table[(high.charCodeAt(0) << 7) | low.charCodeAt(0)] = parseInt(high + low, 16);
  return table;
})();

const varintSize = (n: number): number =>
  n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;

class ProtobufBuffer {
  bytes: Buffer;
  pos = 0;

  constructor(expectedSize: number) {
    this.bytes = Buffer.allocUnsafe(expectedSize);
  }

  /** Room for `n` more bytes. */
  room(n: number): void {
    if (this.pos + n <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.pos + n) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.bytes.copy(grown, 0, 0, this.pos);
    this.bytes = grown;
  }

  /** A non-negative integer below 2^32. */
  varint(n: number): void {
    this.room(5);
    while (n > 0x7f) {
      this.bytes[this.pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.bytes[this.pos++] = n;
  }

  /** Any integer of int64's range, negative ones as their two's complement (ten bytes). */
  int64(n: number): void {
    if (n >= 0 && n < TWO_32) return this.varint(n);
    this.room(10);
    const magnitude = Math.abs(n);
    let low = magnitude >>> 0;
    let high = Math.floor(magnitude / TWO_32) >>> 0;
    if (n < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    while (high > 0 || low > 0x7f) {
      this.bytes[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    this.bytes[this.pos++] = low;
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  string(s: string): void {
    const n = s.length;
    this.room(n * 3 + 5);
    // Most strings are short ASCII: copied as they are, behind a one-byte length.
    if (n < 0x80) {
      const bytes = this.bytes;
      const start = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c > 0x7f) break;
        bytes[start + i] = c;
      }
      if (i === n) {
        bytes[this.pos] = n;
        this.pos = start + n;
        return;
      }
    }
    const length = Buffer.byteLength(s, 'utf8');
    this.varint(length);
    this.pos += this.bytes.write(s, this.pos, 'utf8');
  }

  /** An id in hex, as its bytes: one table lookup per pair of digits. */
  hexBytes(hex: string): void {
    const n = hex.length >>> 1;
    this.room(n + 1);
    const bytes = this.bytes;
    let at = this.pos;
    bytes[at++] = n;
    for (let i = 0; i < 2 * n; i += 2)
      bytes[at++] = BYTE_OF_HEX_PAIR[((hex.charCodeAt(i) & 0x7f) << 7) | (hex.charCodeAt(i + 1) & 0x7f)]!;
    this.pos = at;
  }

  fixed32(n: number): void {
    this.room(4);
    this.littleEndian32(n >>> 0);
  }

  private littleEndian32(n: number): void {
    const bytes = this.bytes;
    const at = this.pos;
    bytes[at] = n & 0xff;
    bytes[at + 1] = (n >>> 8) & 0xff;
    bytes[at + 2] = (n >>> 16) & 0xff;
    bytes[at + 3] = n >>> 24;
    this.pos = at + 4;
  }

  double(n: number): void {
    this.room(8);
    this.bytes.writeDoubleLE(n, this.pos);
    this.pos += 8;
  }

  /** Nanoseconds since the epoch, which exceed 2^53, from [seconds, nanoseconds] without loss. */
  hrTime([seconds, nanos]: HrTime): void {
    this.room(8);
    const fromLow16 = (seconds % 0x10000) * 1e9 + nanos;
    const fromHigh = Math.floor(seconds / 0x10000) * 1e9;
    const highLow16 = fromHigh % 0x10000;
    const sum = highLow16 * 0x10000 + fromLow16;
    this.littleEndian32(sum >>> 0);
    this.littleEndian32((Math.floor(fromHigh / 0x10000) + Math.floor(sum / TWO_32)) >>> 0);
  }

  /** Starts a length-delimited message after its tag, with `reserved` bytes kept for its length. */
  begin(reserved: number): number {
    this.room(reserved);
    const start = this.pos;
    this.pos += reserved;
    return start;
  }

  /** Writes the message's length at `start`, moving the message when its length takes other than `reserved` bytes. */
  end(start: number, reserved: number): void {
    const length = this.pos - start - reserved;
    const size = varintSize(length);
    if (size !== reserved) {
      this.room(size - reserved);
      this.bytes.copyWithin(start + size, start + reserved, this.pos);
      this.pos += size - reserved;
    }
    let at = start;
    let n = length;
    while (n > 0x7f) {
      this.bytes[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.bytes[at] = n;
  }
}

/** AnyValue: a string, boolean, integer of int64's range or double, as the SDK writes them. */
function anyValue(out: ProtobufBuffer, value: AttributeValue | undefined): void {
  if (typeof value === 'string') {
    out.tag(1, LENGTH_DELIMITED);
    out.string(value);
  } else if (typeof value === 'boolean') {
    out.tag(2, VARINT);
    out.varint(value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63) {
      out.tag(3, VARINT);
      out.int64(value);
    } else {
      out.tag(4, FIXED64);
      out.double(value);
    }
  } else throw new Unsupported();
}

/** Repeated KeyValue under `field`. */
function attributes(out: ProtobufBuffer, field: number, all: Attributes): void {
  for (const key in all) {
    if (!Object.prototype.hasOwnProperty.call(all, key)) continue;
    out.tag(field, LENGTH_DELIMITED);
    const keyValue = out.begin(1);
    out.tag(1, LENGTH_DELIMITED);
    out.string(key);
    out.tag(2, LENGTH_DELIMITED);
    const value = out.begin(1);
    anyValue(out, all[key]);
    out.end(value, 1);
    out.end(keyValue, 1);
  }
}

function span(out: ProtobufBuffer, s: ReadableSpan): void {
  if (s.events.length > 0 || s.links.length > 0) throw new Unsupported();
  const context = s.spanContext();
  const message = out.begin(2);
  out.tag(1, LENGTH_DELIMITED);
  out.hexBytes(context.traceId);
  out.tag(2, LENGTH_DELIMITED);
  out.hexBytes(context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) {
    out.tag(3, LENGTH_DELIMITED);
    out.string(traceState);
  }
  const parent = s.parentSpanContext;
  if (parent?.spanId) {
    out.tag(4, LENGTH_DELIMITED);
    out.hexBytes(parent.spanId);
  }
  out.tag(5, LENGTH_DELIMITED);
  out.string(s.name);
  out.tag(6, VARINT);
  out.varint(s.kind + 1); // the proto's SpanKind counts UNSPECIFIED first
  out.tag(7, FIXED64);
  out.hrTime(s.startTime);
  out.tag(8, FIXED64);
  out.hrTime(s.endTime);
  attributes(out, 9, s.attributes);
  if (s.droppedAttributesCount > 0) {
    out.tag(10, VARINT);
    out.varint(s.droppedAttributesCount);
  }
  out.tag(15, LENGTH_DELIMITED);
  const status = out.begin(1);
  if (s.status.message) {
    out.tag(2, LENGTH_DELIMITED);
    out.string(s.status.message);
  }
  out.tag(3, VARINT);
  out.varint(s.status.code);
  out.end(status, 1);
  out.tag(16, FIXED32);
  out.fixed32((context.traceFlags & 0xff) | HAS_IS_REMOTE | (parent?.isRemote ? IS_REMOTE : 0));
  out.end(message, 2);
}

/**
 * ResourceSpans per resource, ScopeSpans per instrumentation scope: a scope by its name, version and
 * schema URL, as the SDK's JSON serializer groups them (its protobuf one compares scope objects, and
 * the proxy's request spans carry a scope object of their own).
 */
function grouped(spans: readonly ReadableSpan[]): Map<ReadableSpan['resource'], Map<string, ReadableSpan[]>> {
  const byResource = new Map<ReadableSpan['resource'], Map<string, ReadableSpan[]>>();
  for (const s of spans) {
    let byScope = byResource.get(s.resource);
    if (byScope === undefined) byResource.set(s.resource, (byScope = new Map()));
    const scope = s.instrumentationScope;
    const key = `${scope.name}@${scope.version ?? ''}:${scope.schemaUrl ?? ''}`;
    let list = byScope.get(key);
    if (list === undefined) byScope.set(key, (list = []));
    list.push(s);
  }
  return byResource;
}

/** The request's bytes, or undefined when a span holds what only the SDK's serializer writes. */
export function encodeSpans(spans: readonly ReadableSpan[]): Uint8Array | undefined {
  const out = new ProtobufBuffer(1024 + spans.length * BYTES_PER_SPAN);
  try {
    for (const [resource, byScope] of grouped(spans)) {
      out.tag(1, LENGTH_DELIMITED);
      const resourceSpans = out.begin(3);
      out.tag(1, LENGTH_DELIMITED);
      const resourceMessage = out.begin(1);
      attributes(out, 1, resource.attributes);
      out.end(resourceMessage, 1);
      for (const list of byScope.values()) {
        const scope = list[0]!.instrumentationScope;
        out.tag(2, LENGTH_DELIMITED);
        const scopeSpans = out.begin(3);
        out.tag(1, LENGTH_DELIMITED);
        const scopeMessage = out.begin(1);
        out.tag(1, LENGTH_DELIMITED);
        out.string(scope.name);
        if (scope.version) {
          out.tag(2, LENGTH_DELIMITED);
          out.string(scope.version);
        }
        out.end(scopeMessage, 1);
        for (const s of list) {
          out.tag(2, LENGTH_DELIMITED);
          span(out, s);
        }
        if (scope.schemaUrl) {
          out.tag(3, LENGTH_DELIMITED);
          out.string(scope.schemaUrl);
        }
        out.end(scopeSpans, 3);
      }
      if (resource.schemaUrl) {
        out.tag(3, LENGTH_DELIMITED);
        out.string(resource.schemaUrl);
      }
      out.end(resourceSpans, 3);
    }
  } catch (err) {
    if (err instanceof Unsupported) return undefined;
    throw err;
  }
  return out.bytes.subarray(0, out.pos);
}

/** The exporter's serializer: this encoder first, the SDK's for a batch it leaves; the SDK's reads the answers. */
export const spanSerializer: ISerializer<ReadableSpan[], IExportTraceServiceResponse> = {
  serializeRequest: (spans) => encodeSpans(spans) ?? ProtobufTraceSerializer.serializeRequest(spans),
  deserializeResponse: (data) => ProtobufTraceSerializer.deserializeResponse(data),
};
