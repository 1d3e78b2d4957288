// An OTLP/HTTP traces export (`ExportTraceServiceRequest`) decoded as a collector decodes it: with the
// official opentelemetry-proto definitions (the .proto files an npm package ships, loaded by
// protobufjs), `application/x-protobuf` and `application/json` alike. The demo trace receiver of the
// tracing guide and the tests' OTLP receiver both read exports through it.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);
/** opentelemetry-proto's own files, as @opentelemetry/otlp-grpc-exporter-base 0.36 ships them. */
const PROTOS = join(
  dirname(require.resolve('@opentelemetry/otlp-grpc-exporter-base/package.json')),
  'build/protos',
);

/** Attributes as plain values: strings, numbers (int64 as a number), booleans. */
function plain(attributes) {
  const out = {};
  for (const { key, value } of attributes ?? []) {
    if (value?.stringValue !== undefined) out[key] = value.stringValue;
    else if (value?.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value?.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value?.boolValue !== undefined) out[key] = value.boolValue;
  }
  return out;
}

/** OTLP/JSON writes trace and span ids in hex where protobuf's JSON mapping has base64 (the OTLP spec's one exception). */
function idsToBase64(json) {
  if (Array.isArray(json)) return json.map(idsToBase64);
  if (typeof json !== 'object' || json === null) return json;
  const out = {};
  for (const [key, value] of Object.entries(json))
    out[key] =
      (key === 'traceId' || key === 'spanId' || key === 'parentSpanId') && typeof value === 'string'
        ? Buffer.from(value, 'hex').toString('base64')
        : idsToBase64(value);
  return out;
}

const hex = (base64) => Buffer.from(base64 ?? '', 'base64').toString('hex');
const epochMs = (nanos) => Number(BigInt(nanos ?? '0') / 1000n) / 1000;

/** `ExportTraceServiceRequest` as opentelemetry-proto defines it. */
export async function traceRequestType() {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTOS, target);
  await root.load('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: false });
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

/** A decoder of exports: `decode(contentType, body)` gives the spans of one export, in order. */
export async function traceExportDecoder() {
  const Request = await traceRequestType();
  return (contentType, body) => {
    const message = contentType.startsWith('application/json')
      ? Request.fromObject(idsToBase64(JSON.parse(body.toString('utf8'))))
      : Request.decode(body);
    const decoded = Request.toObject(message, { longs: String, enums: Number, bytes: String });
    const spans = [];
    for (const resourceSpans of decoded.resourceSpans ?? []) {
      const resource = plain(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          spans.push({
            traceId: hex(span.traceId),
            spanId: hex(span.spanId),
            parentSpanId: hex(span.parentSpanId),
            name: span.name,
            kind: span.kind ?? 0,
            attributes: plain(span.attributes),
            statusCode: span.status?.code ?? 0,
            resource,
            startMs: epochMs(span.startTimeUnixNano),
            endMs: epochMs(span.endTimeUnixNano),
          });
    }
    return spans;
  };
}
