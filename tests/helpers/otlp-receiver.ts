/**
 * An OTLP/HTTP traces receiver on 127.0.0.1, as a collector is one: it decodes every export with the
 * official opentelemetry-proto definitions (the .proto files an npm package ships, loaded by
 * protobufjs), `application/x-protobuf` and `application/json` alike, and keeps the spans. Its answer is
 * programmable, so a test can play a collector that refuses or hangs.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);
/** opentelemetry-proto's own files, as @opentelemetry/otlp-grpc-exporter-base 0.36 ships them. */
const PROTOS = join(
  dirname(require.resolve('@opentelemetry/otlp-grpc-exporter-base/package.json')),
  'build/protos',
);

/** A status to answer, or `hang`: never answer while the receiver is open. */
export type CollectorAnswer = number | 'hang';

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

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** The content type and raw body of every export received. */
  readonly exports: { contentType: string; body: Buffer }[];
  answer: CollectorAnswer;
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: KeyValue[];
  status?: { code?: number };
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
}
interface DecodedRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { spans?: DecodedSpan[] }[];
  }[];
}

function plain(attributes: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    if (value?.stringValue !== undefined) out[key] = value.stringValue;
    else if (value?.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value?.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value?.boolValue !== undefined) out[key] = value.boolValue;
  }
  return out;
}

/** OTLP/JSON writes trace and span ids in hex where protobuf's JSON mapping has base64 (the OTLP spec's one exception). */
function idsToBase64(json: unknown): unknown {
  if (Array.isArray(json)) return json.map(idsToBase64);
  if (typeof json !== 'object' || json === null) return json;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json))
    out[key] =
      (key === 'traceId' || key === 'spanId' || key === 'parentSpanId') && typeof value === 'string'
        ? Buffer.from(value, 'hex').toString('base64')
        : idsToBase64(value);
  return out;
}

/** `ExportTraceServiceRequest` as opentelemetry-proto defines it. */
export async function traceRequestType(): Promise<protobuf.Type> {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTOS, target);
  await root.load('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: false });
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const Request = await traceRequestType();
  const hanging = new Set<ServerResponse>();

  const decode = (contentType: string, body: Buffer): DecodedRequest => {
    const message = contentType.startsWith('application/json')
      ? Request.fromObject(idsToBase64(JSON.parse(body.toString('utf8'))) as Record<string, unknown>)
      : Request.decode(body);
    return Request.toObject(message, { longs: String, enums: Number, bytes: String }) as DecodedRequest;
  };

  const receiver: OtlpReceiver = {
    url: '',
    spans: [],
    exports: [],
    answer: 200,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const contentType = req.headers['content-type'] ?? '';
      const body = Buffer.concat(chunks);
      if (req.url !== '/v1/traces' || req.method !== 'POST') {
        res.writeHead(404).end();
        return;
      }
      receiver.exports.push({ contentType, body });
      if (receiver.answer === 'hang') {
        hanging.add(res);
        return;
      }
      if (receiver.answer !== 200) {
        res.writeHead(receiver.answer).end();
        return;
      }
      const decoded = decode(contentType, body);
      for (const resourceSpans of decoded.resourceSpans ?? []) {
        const resource = plain(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            receiver.spans.push({
              traceId: Buffer.from(span.traceId, 'base64').toString('hex'),
              spanId: Buffer.from(span.spanId, 'base64').toString('hex'),
              parentSpanId: Buffer.from(span.parentSpanId ?? '', 'base64').toString('hex'),
              name: span.name,
              kind: span.kind ?? 0,
              attributes: plain(span.attributes),
              statusCode: span.status?.code ?? 0,
              resource,
              startMs: Number(BigInt(span.startTimeUnixNano ?? '0') / 1000n) / 1000,
              endMs: Number(BigInt(span.endTimeUnixNano ?? '0') / 1000n) / 1000,
            });
      }
      res
        .writeHead(200, { 'content-type': contentType })
        .end(contentType.startsWith('application/json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(receiver, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}
