// Preloaded into a Tollgate process (`node --import`) by `npm run bench -- forged-keys`: once the public
// listener (DRIVER_PORT) listens, it hands that listener CORS preflights and wrong-checksum secrets, one
// request at a time, in alternating rounds, through a socket that keeps nothing it is written. Neither
// the kernel nor wrk has a share in what it times: the CPU of Tollgate's own path and of Node's HTTP
// objects and streams, which the loopback's system calls hide under wrk on a VM. It writes every
// round's µs per request to DRIVER_OUT (JSON), then ends the process. DRIVER_REQUESTS a round and
// DRIVER_ROUNDS are the bench's (bench/commands/forged-keys.ts).
import fs from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { Duplex } from 'node:stream';

const env = process.env;
const PORT = Number(env.DRIVER_PORT);
const REQUESTS = Number(env.DRIVER_REQUESTS);
const ROUNDS = Number(env.DRIVER_ROUNDS);
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A client connection that takes every write and keeps none. */
class Sink extends Duplex {
  readonly remoteAddress = '127.0.0.1';
  readonly remotePort = 40000;
  override _write(_chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    done();
  }
  override _read(): void {}
  setTimeout(): this {
    return this;
  }
}

// As bench/forged-key.lua: the default prefix, 36 random base62 characters (a right checksum once in
// 62^6), 10,000 sent in turn. Copied through a Buffer so that each is one flat string, as a parsed
// header's value is.
const forged = Array.from({ length: 10_000 }, () => {
  let secret = 'tg_';
  for (let i = 0; i < 36; i++) secret += BASE62[Math.floor(Math.random() * 62)];
  return Buffer.from(secret).toString('latin1');
});
const host = `127.0.0.1:${PORT}`;
const preflightHeaders = [
  'Host',
  host,
  'Origin',
  'https://app.example.com',
  'Access-Control-Request-Method',
  'GET',
  'Access-Control-Request-Headers',
  'authorization',
];

type Kind = 'preflight' | 'forged';

function answer(server: http.Server, kind: Kind, i: number, socket: Sink): Promise<number> {
  const req = new http.IncomingMessage(socket as never);
  req.method = kind === 'preflight' ? 'OPTIONS' : 'GET';
  req.url = '/bench/item?id=42';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  const raw =
    kind === 'preflight' ? preflightHeaders : ['Host', host, 'x-api-key', forged[i % forged.length]!];
  (req as unknown as { _addHeaderLines(raw: string[], n: number): void })._addHeaderLines(raw, raw.length);
  req.complete = true;
  req.push(null);
  const res = new http.ServerResponse(req);
  res.shouldKeepAlive = true;
  res.assignSocket(socket as never);
  return new Promise((resolve) => {
    res.on('finish', () => {
      res.detachSocket(socket as never);
      resolve(res.statusCode);
    });
    server.emit('request', req, res);
  });
}

/** µs per request of `n` requests of one kind, one after another; and the last one's status. */
async function round(server: http.Server, kind: Kind, n: number, socket: Sink): Promise<[number, number]> {
  const started = performance.now();
  let status = 0;
  for (let i = 0; i < n; i++) status = await answer(server, kind, i, socket);
  return [((performance.now() - started) * 1000) / n, status];
}

async function drive(server: http.Server): Promise<void> {
  const socket = new Sink();
  // Warm-up: the code of both paths optimised, the address out of guesses (429s from here on).
  for (const kind of ['preflight', 'forged'] as const) await round(server, kind, REQUESTS * 2, socket);
  const result = { preflight: [] as number[], forged: [] as number[], statuses: {} as Record<Kind, number> };
  for (let r = 0; r < ROUNDS; r++) {
    // The first of each pair alternates, so that neither always follows the other.
    for (const kind of r % 2 === 0
      ? (['preflight', 'forged'] as const)
      : (['forged', 'preflight'] as const)) {
      const [us, status] = await round(server, kind, REQUESTS, socket);
      result[kind].push(us);
      result.statuses[kind] = status;
    }
  }
  fs.writeFileSync(env.DRIVER_OUT!, JSON.stringify(result));
  process.exit(0);
}

const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (this: http.Server, ...args: unknown[]) {
  const port = typeof args[0] === 'object' ? (args[0] as { port?: number }).port : args[0];
  // The ops listener's /readyz answers first; the public listener is driven once it listens.
  if (port === PORT) this.once('listening', () => setTimeout(() => void drive(this), 500));
  return listen.apply(this, args as never);
} as typeof http.Server.prototype.listen;
