/**
 * An OTLP/HTTP traces receiver on 127.0.0.1, as a collector is one: it decodes every export with the
 * official opentelemetry-proto definitions (scripts/lib/otlp-trace-export.mjs), `application/x-protobuf`
 * and `application/json` alike, and keeps the spans. Its answer is programmable, so a test can play a
 * collector that refuses or hangs.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { traceExportDecoder, type ReceivedSpan } from '../../scripts/lib/otlp-trace-export.mjs';

export type { ReceivedSpan };

/** A status to answer, or `hang`: never answer while the receiver is open. */
export type CollectorAnswer = number | 'hang';

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** The content type and raw body of every export received. */
  readonly exports: { contentType: string; body: Buffer }[];
  answer: CollectorAnswer;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const decode = await traceExportDecoder();
  const hanging = new Set<ServerResponse>();

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
      receiver.spans.push(...decode(contentType, body));
      res
        .writeHead(200, { 'content-type': contentType })
        .end(contentType.startsWith('application/json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(receiver, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}
