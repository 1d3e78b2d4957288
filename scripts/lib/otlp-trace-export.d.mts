import type protobuf from 'protobufjs';

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** SpanKind of the proto: 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** Status code of the proto: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly resource: Readonly<Record<string, string | number | boolean>>;
  /** Epoch milliseconds, with the fraction the nanoseconds give. */
  readonly startMs: number;
  readonly endMs: number;
}

export function traceExportDecoder(): Promise<(contentType: string, body: Buffer) => ReceivedSpan[]>;

/** `ExportTraceServiceRequest` as opentelemetry-proto defines it. */
export function traceRequestType(): Promise<protobuf.Type>;
