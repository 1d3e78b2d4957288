// An OTLP/HTTP traces endpoint in the bench's own process, and what Tollgate says it dropped.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { metricSum } from './metrics.ts';

/** Takes every export and answers 200 at once, or (`hang`) holds every request unanswered. */
export async function startCollector(
  port: number,
  hang: boolean,
): Promise<{ server: Server; exports: () => number }> {
  let exports = 0;
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      exports++;
      if (hang) held.push(res);
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  server.on('close', () => held.forEach((res) => res.destroy()));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, exports: () => exports };
}

/** `tollgate_trace_spans_dropped_total` over every reason. */
export const droppedSpans = (opsPort: number): Promise<number> =>
  metricSum(opsPort, 'tollgate_trace_spans_dropped_total');
