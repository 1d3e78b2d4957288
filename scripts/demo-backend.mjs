// A stand-in backend for the README walk-through: answers every request with what it received.
// BACKEND_NAME (default demo) tells several apart, as the routes guide runs them.
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 3000);
const name = process.env.BACKEND_NAME ?? 'demo';
createServer((req, res) => {
  const body = JSON.stringify({
    backend: name,
    method: req.method,
    url: req.url,
    apiKeyReceived: req.headers['x-api-key'] !== undefined,
    consumerApiKeyId: req.headers['x-consumer-api-key-id'],
    // Tracing on (docs/guides/tracing.md): the span of Tollgate's call, under which a backend's own go.
    traceparent: req.headers.traceparent,
  });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(body + '\n');
}).listen(port, '127.0.0.1', () => console.log(`${name} backend on http://127.0.0.1:${port}`));
