import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import type { Duplex } from 'node:stream';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import { loadConfig, type Config } from '../../src/config.js';
import { LastUseTracker } from '../../src/keys/last-use.js';
import { KeyCache } from '../../src/keys/key-cache.js';
import { LocalKeyEvents } from '../../src/keys/key-events.js';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../../src/keys/secret.js';
import { MemoryRateLimiter } from '../../src/limits/memory-limiter.js';
import type { RateLimiter } from '../../src/limits/rate-limiter.js';
import type { Period } from '../../src/limits/window.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import type { AuthThrottle } from '../../src/proxy/auth-throttle.js';
import { createProxyHandler, type ProxyHandler } from '../../src/proxy/handler.js';
import { createUpgradeHandler, type UpgradeHandler } from '../../src/proxy/websocket.js';
import { createPublicServer } from '../../src/server.js';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { PlanRepository } from '../../src/store/plan-repository.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import type { UsageBatch } from '../../src/usage/usage.js';
import { pendingTotal } from './pending.js';

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly body: Buffer;
}

/**
 * A real backend that records what reaches it. Routes: `/slow` answers after `slowMs`; `/echo`
 * streams the request body back; `/status/NNN` answers NNN; `/hop` answers with hop-by-hop headers;
 * `/trailers` answers chunked with a trailer field;
 * anything else answers 200 with a small JSON body. WebSocket upgrades are accepted and echo messages.
 */
export class RecordingBackend {
  readonly received: Received[] = [];
  readonly upgrades: Received[] = [];
  slowMs = 2_000;
  /** Accept upgrade requests but never answer them. */
  hangUpgrades = false;
  /** Answer upgrade requests with this plain HTTP status, as a backend that speaks no WebSocket. */
  plainUpgradeStatus: number | undefined;
  private readonly hung: Duplex[] = [];
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  /** Called for `/hooked` requests: the test drives the response. */
  hook: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;

  constructor() {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on('upgrade', (req: IncomingMessage, socket, head) => {
      this.upgrades.push({ method: req.method!, url: req.url!, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.alloc(0) });
      if (this.hangUpgrades) {
        this.hung.push(socket);
        return;
      }
      if (this.plainUpgradeStatus !== undefined) {
        socket.end(`HTTP/1.1 ${this.plainUpgradeStatus} Plain\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nconnection: close\r\n\r\nplain`);
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data, binary) => ws.send(data, { binary })));
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const entry = { method: req.method!, url: req.url!, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.alloc(0) };
    this.received.push(entry);
    const path = req.url!.split('?')[0]!;
    if (path.endsWith('/hooked') && this.hook) return this.hook(req, res);
    if (path.endsWith('/echo')) {
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream' });
      req.pipe(res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      entry.body = Buffer.concat(chunks);
      if (path.endsWith('/slow')) {
        setTimeout(() => res.end('late'), this.slowMs).unref();
        return;
      }
      const status = /\/status\/(\d{3})$/.exec(path);
      if (status) {
        res.writeHead(Number(status[1]), { 'content-type': 'application/json' });
        res.end('{"status":' + status[1] + '}');
        return;
      }
      if (path.endsWith('/trailers')) {
        // Chunked, with a trailer field announced in `Trailer`.
        res.writeHead(200, { 'content-type': 'text/plain', trailer: 'X-Checksum' });
        res.write('body');
        res.addTrailers({ 'x-checksum': 'sha256=abc' });
        res.end();
        return;
      }
      if (path.endsWith('/hop')) {
        res.writeHead(200, {
          'content-type': 'text/plain',
          connection: 'x-backend-private',
          'x-backend-private': 'secret-hop',
          'keep-alive': 'timeout=5',
          'proxy-authenticate': 'Basic',
          'x-end-to-end': 'kept',
        });
        res.end('hop');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-backend': 'yes' });
      res.end(JSON.stringify({ ok: true, path: req.url }));
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const client of this.wss.clients) client.terminate();
    for (const socket of this.hung) socket.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Usage batches as the recorder would hand them to Postgres, kept in memory for assertions. */
class MemorySink {
  readonly batches: UsageBatch[] = [];
  write(batch: UsageBatch): Promise<void> {
    if (batch.size > 0) this.batches.push(batch);
    return Promise.resolve();
  }
  heldRequests(): number {
    return 0;
  }
}

export interface HarnessOptions {
  readonly upstreamPath?: string;
  readonly upstreamTimeoutMs?: number;
  readonly env?: Record<string, string>;
  readonly limiter?: RateLimiter;
  /** Point the proxy at a port nobody listens on. */
  readonly deadBackend?: boolean;
  readonly authThrottle?: AuthThrottle;
  /** Log at debug into `logLines` instead of discarding logs. */
  readonly captureLogs?: boolean;
}

/** One embedded database per test file (module registries are per file): PGlite starts slowly. */
let sharedDb: Promise<DbHandle> | undefined;
let sharedDir: string | undefined;

async function database(): Promise<DbHandle> {
  sharedDb ??= (async () => {
    sharedDir = mkdtempSync(join(tmpdir(), 'tg-proxy-'));
    const handle = await openEmbedded(sharedDir);
    await migrate(handle);
    return handle;
  })();
  return sharedDb;
}

/** Closes the file's database; call from the file's last `afterAll`. */
export async function closeDatabase(): Promise<void> {
  if (sharedDb === undefined) return;
  await (await sharedDb).close();
  rmSync(sharedDir!, { recursive: true, force: true });
  sharedDb = undefined;
}

/** Tollgate's public server in process, in front of a recording backend, over an embedded database. */
export class ProxyHarness {
  readonly backend = new RecordingBackend();
  readonly events = new LocalKeyEvents();
  readonly metrics = new Metrics();
  logger = createLogger('silent');
  readonly logLines: string[] = [];
  /** Fixed so window arithmetic in assertions is exact: Monday 2026-01-05 10:00:00.250 UTC. */
  now = Date.UTC(2026, 0, 5, 10, 0, 0, 250);
  readonly clock = (): number => this.now;
  readonly encryptionKey = randomBytes(32);
  /** Counts look-ups that reached the database. */
  lookups = 0;
  failLookups = false;

  db!: DbHandle;
  keys!: KeyRepository;
  plans!: PlanRepository;
  keyCache!: KeyCache;
  recorder!: UsageRecorder;
  lastUse!: LastUseTracker;
  config!: Config;
  proxy!: ProxyHandler;
  upgrade!: UpgradeHandler;
  port = 0;
  private server!: Server;
  private limiter!: RateLimiter;

  async start(options: HarnessOptions = {}): Promise<this> {
    if (options.captureLogs) this.logger = createLogger('debug', { write: (line: string) => void this.logLines.push(line) });
    this.db = await database();
    this.keys = new KeyRepository(this.db.db);
    this.plans = new PlanRepository(this.db.db);

    const backendPort = await this.backend.listen();
    // A dead backend: the port was just released, so nothing listens on it.
    if (options.deadBackend) await this.backend.close();
    this.config = loadConfig({
      UPSTREAM_URL: `http://127.0.0.1:${backendPort}${options.upstreamPath ?? ''}`,
      UPSTREAM_TIMEOUT_MS: String(options.upstreamTimeoutMs ?? 2_000),
      ...options.env,
    });
    this.keyCache = new KeyCache({
      lookup: (hash) => {
        this.lookups++;
        if (this.failLookups) return Promise.reject(new Error('database down'));
        return this.keys.findBySecretHash(hash);
      },
      events: this.events,
      metrics: this.metrics,
      defaultRateLimit: this.config.defaultRateLimit,
      clock: this.clock,
    });
    this.limiter = options.limiter ?? new MemoryRateLimiter();
    this.recorder = new UsageRecorder(new MemorySink(), this.logger, this.metrics);
    this.lastUse = new LastUseTracker((times) => this.keys.markUsed(times), this.logger);
    const deps = {
      config: this.config,
      keyCache: this.keyCache,
      limiter: this.limiter,
      recorder: this.recorder,
      lastUse: this.lastUse,
      metrics: this.metrics,
      logger: this.logger,
      clock: this.clock,
      authThrottle: options.authThrottle,
    };
    this.proxy = createProxyHandler(deps);
    this.upgrade = createUpgradeHandler(deps);
    this.server = createPublicServer({
      managementApp: (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"management":true}');
      },
      proxy: this.proxy,
      upgrade: this.upgrade,
      managementPrefix: this.config.managementPrefix,
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A key as the management API would create it; optionally bound to a new plan. */
  async createKey(plan?: { limit: number; period: Period }): Promise<{ id: string; secret: string }> {
    const id = generateKeyId();
    const secret = generateSecret();
    await this.keys.insert({
      id,
      name: 'test',
      secretHash: hashSecret(secret),
      secretCiphertext: encryptSecret(secret, this.encryptionKey),
      createdAt: new Date(),
    });
    if (plan) {
      const rateLimitId = 'plan-' + randomBytes(4).toString('hex');
      await this.plans.insert({ rateLimitId, description: '', limit: plan.limit, period: plan.period, createdAt: new Date() });
      await this.keys.bindPlan(id, rateLimitId, new Date());
    }
    return { id, secret };
  }

  /** Usage recorded so far for a key (not yet flushed). */
  async usage(keyId: string): Promise<{ requests: number; successful: number; failed: number; endpoints: string[]; customers: Record<string, number> }> {
    const u = await pendingTotal(this.recorder, keyId);
    const customers = Object.fromEntries([...(u?.customers ?? [])].map(([id, c]) => [id, c.requests]));
    const totals = { requests: 0, successful: 0, failed: 0, endpoints: [] as string[], customers };
    for (const [endpoint, e] of u?.endpoints ?? []) {
      totals.requests += e.requests;
      totals.successful += e.successful;
      totals.failed += e.failed;
      totals.endpoints.push(endpoint);
    }
    return totals;
  }

  async metric(name: string): Promise<string> {
    const text = await this.metrics.registry.metrics();
    return text
      .split('\n')
      .filter((l) => l.startsWith(name))
      .join('\n');
  }

  async stop(): Promise<void> {
    if (this.server === undefined) return;
    this.upgrade.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.proxy.close();
    await this.limiter.close();
    await this.backend.close().catch(() => undefined);
  }
}

/** Sends bytes as they are and returns the whole answer: for requests no HTTP client would send. */
export function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('raw request timed out')));
  });
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
