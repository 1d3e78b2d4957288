// A stand-in for an OpenTelemetry collector, for the tracing guide: takes OTLP/HTTP exports on
// /v1/traces (http/protobuf or http/json), decodes them with the official opentelemetry-proto files
// and prints each span on one line: its kind, name, ids, duration and attributes.
import { createServer } from 'node:http';
import { traceExportDecoder } from './lib/otlp-trace-export.mjs';

const port = Number(process.env.PORT ?? 4318);
const KINDS = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
const STATUSES = ['unset', 'ok', 'error'];
const decode = await traceExportDecoder();

createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/v1/traces') {
    res.writeHead(req.method === 'GET' ? 200 : 404, { 'content-type': 'text/plain' });
    res.end('demo trace receiver: POST OTLP/HTTP exports to /v1/traces\n');
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const contentType = req.headers['content-type'] ?? '';
    let spans;
    try {
      spans = decode(contentType, Buffer.concat(chunks));
    } catch (err) {
      console.log(`an export that does not decode: ${err.message}`);
      res.writeHead(400).end();
      return;
    }
    for (const span of spans) {
      const attributes = Object.entries(span.attributes).map(([key, value]) => `${key}=${value}`);
      console.log(
        [
          `${KINDS[span.kind] ?? span.kind} ${span.name}`,
          `trace=${span.traceId} span=${span.spanId} parent=${span.parentSpanId || '-'}`,
          `${(span.endMs - span.startMs).toFixed(2)} ms, status ${STATUSES[span.statusCode] ?? span.statusCode}`,
          `service.name=${span.resource['service.name']}`,
          ...attributes,
        ].join('  '),
      );
    }
    res
      .writeHead(200, { 'content-type': contentType })
      .end(contentType.startsWith('application/json') ? '{}' : '');
  });
}).listen(port, '127.0.0.1', () => console.log(`demo trace receiver on http://127.0.0.1:${port}/v1/traces`));
