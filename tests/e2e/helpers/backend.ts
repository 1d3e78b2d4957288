import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
  /** When the request arrived, epoch ms. */
  at: number;
}

export interface Backend {
  readonly url: string;
  readonly port: number;
  readonly received: Received[];
  close(): Promise<void>;
}

/**
 * A real HTTP backend that records every request it receives. Routes:
 * a path with `/status/<code>` answers that status; with `/slow/<ms>` it answers after that delay; anything else echoes
 * `{method, url}` as JSON with status 200. A WebSocket upgrade is recorded too, and echoes each message.
 */
export async function startBackend(port = 0): Promise<Backend> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const at = Date.now();
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks),
        at,
      });
      const status = /\/status\/(\d{3})/.exec(req.url!);
      const slow = /\/slow\/(\d+)/.exec(req.url!);
      const answer = () => {
        res.writeHead(status ? Number(status[1]) : 200, {
          'content-type': 'application/json',
          'x-backend': 'yes',
        });
        res.end(JSON.stringify({ method: req.method, url: req.url }));
      };
      if (slow) setTimeout(answer, Number(slow[1]));
      else answer();
    });
  });
  // A WebSocket handshake is recorded as any request, and the socket echoes what it is sent.
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    received.push({
      method: req.method!,
      url: req.url!,
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body: Buffer.alloc(0),
      at: Date.now(),
    });
    sockets.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(data)));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of sockets.clients) ws.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
