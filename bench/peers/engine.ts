// A bare forwarder with no key check and no limiter, to price the forwarding call on its own:
//   ENGINE=stream    undici Pool.stream, as src/proxy/handler.ts forwarded before it moved to dispatch;
//   ENGINE=dispatch  Pool.dispatch with one handler object per request (as src/proxy/handler.ts now) on undici's own (raw header)
//                    handler interface: no AsyncResource, no stream tracking, no parsed header
//                    object, the response head handed to writeHead as a flat list.
// Env: PORT, BACKEND_URL, ENGINE. Used by `npm run bench -- engines`.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { Pool, type Dispatcher } from 'undici';

const env = process.env;
const engine = env.ENGINE === 'dispatch' ? 'dispatch' : 'stream';
const backend = new URL(env.BACKEND_URL ?? 'http://127.0.0.1:18080');
const pool = new Pool(backend.origin, { connections: 128 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function requestHeaders(req: IncomingMessage): string[] {
  const out: string[] = [];
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || name === 'host' || name === 'authorization') continue;
    if (Array.isArray(value)) for (const v of value) out.push(name, v);
    else out.push(name, value);
  }
  out.push('x-api-key', 'bench');
  return out;
}

class Exchange implements Dispatcher.DispatchHandler {
  private abort: ((err?: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  private readonly onDrain = (): void => this.resume?.();
  private readonly res: ServerResponse;

  // No parameter property: Node runs this file by stripping types, which cannot rewrite them.
  constructor(res: ServerResponse) {
    this.res = res;
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void): boolean {
    this.resume = resume;
    const flat: string[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const name = (raw[i] as Buffer).toString('latin1');
      if (HOP_BY_HOP.has(name.toLowerCase())) continue;
      flat.push(name, (raw[i + 1] as Buffer).toString('latin1'));
    }
    this.res.writeHead(statusCode, flat);
    return true;
  }

  onData(chunk: Buffer): boolean {
    // A client that went away frees the backend connection instead of holding it paused.
    if (this.res.destroyed) {
      this.abort?.();
      return false;
    }
    if (this.res.write(chunk)) return true;
    this.res.once('drain', this.onDrain);
    this.res.once('close', this.onDrain);
    return false;
  }

  onComplete(): void {
    this.res.end();
  }

  onError(): void {
    if (this.res.headersSent) this.res.destroy();
    else this.res.writeHead(502).end();
  }
}

function forward(req: IncomingMessage, res: ServerResponse): void {
  const opts = {
    path: req.url ?? '/',
    method: req.method as Dispatcher.HttpMethod,
    headers: requestHeaders(req),
  };
  if (engine === 'dispatch') {
    pool.dispatch(opts, new Exchange(res));
    return;
  }
  pool.stream(
    { ...opts, opaque: res },
    ({ statusCode, headers, opaque }) => {
      for (const name in headers) if (HOP_BY_HOP.has(name)) delete headers[name];
      (opaque as ServerResponse).writeHead(statusCode, headers);
      return opaque as ServerResponse;
    },
    (err, { opaque }) => {
      const out = opaque as ServerResponse;
      if (err && !out.headersSent) out.writeHead(502).end();
    },
  );
}

const server = http.createServer({ keepAliveTimeout: 65_000 }, forward);
server.listen(Number(env.PORT ?? 18095), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  void pool.close().finally(() => process.exit(0));
});
