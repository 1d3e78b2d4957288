import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import type { Duplex } from 'node:stream';
import { join } from 'node:path';
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { WebSocketServer } from 'ws';
import { buildAdapters } from '../../src/adapters.js';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { KeyEvents } from '../../src/keys/key-events.js';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../../src/keys/secret.js';
import type { RateLimiter } from '../../src/limits/rate-limiter.js';
import { ruleOf, type LimitInput } from '../../src/plans/plan.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { PlanRepository } from '../../src/store/plan-repository.js';
import { waitFor } from './poll.js';
import { storedMinuteRequestsIn } from './stored-usage.js';

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly body: Buffer;
}

/** A key's usage on one day as the proxy tests read it: the day's bucket, its paths and customers. */
export interface UsageOfTheDay {
  readonly requests: number;
  readonly successful: number;
  readonly failed: number;
  readonly cost: number;
  readonly statusClasses: Record<'2xx' | '3xx' | '4xx' | '5xx', number>;
  readonly outcomes: Record<string, number>;
  readonly endpoints: string[];
  readonly customers: Record<string, number>;
  /** The routes the requests took (null: the catch-all, or none) and their requests, most first. */
  readonly routes: [string | null, number][];
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
      this.upgrades.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.alloc(0),
      });
      if (this.hangUpgrades) {
        this.hung.push(socket);
        return;
      }
      if (this.plainUpgradeStatus !== undefined) {
        socket.end(
          `HTTP/1.1 ${this.plainUpgradeStatus} Plain\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nconnection: close\r\n\r\nplain`,
        );
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) =>
        ws.on('message', (data, binary) => ws.send(data, { binary })),
      );
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const entry = {
      method: req.method!,
      url: req.url!,
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body: Buffer.alloc(0),
    };
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

export interface HarnessOptions {
  readonly upstreamPath?: string;
  readonly upstreamTimeoutMs?: number;
  readonly env?: Record<string, string>;
  /**
   * In place of the adapters' limiter, for a case production cannot stage at will (a limiter that
   * fails or stalls): buildApp takes it from the adapters, as it takes the one buildAdapters chose.
   */
  readonly limiter?: RateLimiter;
  /** Point the proxy at a port nobody listens on. */
  readonly deadBackend?: boolean;
  /** Log at debug into `logLines` instead of discarding logs. */
  readonly captureLogs?: boolean;
  /**
   * The database to run on instead of the file's embedded one (Postgres, for Redis mode with `env`
   * naming REDIS_URL): migrated by the caller, closed by the caller.
   */
  readonly database?: DbHandle;
}

/** One embedded database per test file (module registries are per file). */
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

/**
 * While `down`, every query fails as it does when Postgres stops answering; with a `latencyMs`, every
 * answer comes that much later, as over a network, so concurrent requests' queries overlap.
 */
class DatabaseOutage implements KyselyPlugin {
  down = false;
  latencyMs = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.down) throw new Error('connect ECONNREFUSED (the test took the database down)');
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    return args.result;
  }
}

/**
 * Tollgate built as production builds it (buildAdapters, then buildApp: proxy, management API, auth
 * throttle, usage recorder and key cache as main.ts wires them), embedded mode on the file's
 * database unless told otherwise, in front of a recording backend, on a clock the test moves.
 */
export class ProxyHarness {
  readonly backend = new RecordingBackend();
  readonly metrics = new Metrics();
  logger = createLogger('silent');
  readonly logLines: string[] = [];
  /** Fixed so window arithmetic in assertions is exact: Monday 2026-01-05 10:00:00.250 UTC. */
  now = Date.UTC(2026, 0, 5, 10, 0, 0, 250);
  /** The real time instead of `now`, for what measures rates (leases) or outlives a frozen minute. */
  realTime = false;
  readonly clock = (): number => (this.realTime ? Date.now() : this.now);
  readonly encryptionKey = randomBytes(32);
  readonly rootToken = 'root-' + randomBytes(16).toString('hex');
  private readonly outage = new DatabaseOutage();

  /** The app's database, for what the management API would do; the file shares it. */
  db!: DbHandle;
  keys!: KeyRepository;
  plans!: PlanRepository;
  /** Where the app hears of key and plan changes, as the management API announces them. */
  events!: KeyEvents;
  config!: Config;
  app!: App;
  port = 0;
  /** EXTAUTH_PORT and EXTAUTH_GRPC_PORT as bound, when `env` set them (0: any free one). */
  extauthPort: number | undefined;
  extauthGrpcPort: number | undefined;
  private dataDir: string | undefined;
  private stopped: Promise<void> | undefined;

  async start(options: HarnessOptions = {}): Promise<this> {
    if (options.captureLogs)
      this.logger = createLogger('debug', { write: (line: string) => void this.logLines.push(line) });
    const shared = options.database ?? (await database());
    // The app's view of the file's database: it may be taken down, and closing it is the file's.
    this.db = { ...shared, db: shared.db.withPlugin(this.outage), close: () => Promise.resolve() };
    this.keys = new KeyRepository(shared.db);
    this.plans = new PlanRepository(shared.db);

    const backendPort = await this.backend.listen();
    // A dead backend: the port was just released, so nothing listens on it.
    if (options.deadBackend) await this.backend.close();
    this.dataDir = mkdtempSync(join(tmpdir(), 'tg-proxy-data-'));
    this.config = loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      OPS_PORT: '0',
      DATA_DIR: this.dataDir,
      ROOT_TOKEN: this.rootToken,
      UPSTREAM_URL: `http://127.0.0.1:${backendPort}${options.upstreamPath ?? ''}`,
      UPSTREAM_TIMEOUT_MS: String(options.upstreamTimeoutMs ?? 2_000),
      ...options.env,
    });
    const adapters = await buildAdapters(this.config, this.db, this.logger, this.metrics);
    this.events = adapters.keyEvents;
    this.app = buildApp({
      config: this.config,
      logger: this.logger,
      metrics: this.metrics,
      adapters: options.limiter ? { ...adapters, limiter: options.limiter } : adapters,
      rootToken: this.rootToken,
      encryptionKeys: [this.encryptionKey],
      clock: this.clock,
    });
    const ports = await this.app.listen();
    this.port = ports.port;
    this.extauthPort = ports.extauthPort;
    this.extauthGrpcPort = ports.extauthGrpcPort;
    return this;
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Every query the app makes fails until `databaseUp()`. */
  databaseDown(): void {
    this.outage.down = true;
  }

  databaseUp(): void {
    this.outage.down = false;
  }

  /** Every query of the app answers `ms` later (0: at once). */
  databaseLatency(ms: number): void {
    this.outage.latencyMs = ms;
  }

  /** A key as the management API would create it, bound to a new plan of `limits` when given. */
  async createKey(...limits: LimitInput[]): Promise<{ id: string; secret: string }> {
    const id = generateKeyId();
    const secret = generateSecret();
    await this.keys.insert({
      id,
      name: 'test',
      secretHash: hashSecret(secret),
      secretCiphertext: encryptSecret(secret, this.encryptionKey),
      createdAt: new Date(),
    });
    if (limits.length > 0) {
      const rateLimitId = 'plan-' + randomBytes(4).toString('hex');
      await this.plans.insert({
        rateLimitId,
        description: '',
        limits: limits.map(ruleOf),
        createdAt: new Date(),
      });
      await this.keys.bindPlan(id, rateLimitId, new Date());
    }
    return { id, secret };
  }

  /** A management API call with the root token and a JSON body; the answer's status and JSON body. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
  async admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(this.base + path, {
      method,
      headers: {
        authorization: `Bearer ${this.rootToken}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: await res.json() };
  }

  /** A management API call with the root token. */
  async manage(path: string): Promise<Response> {
    return fetch(this.base + path, { headers: { authorization: `Bearer ${this.rootToken}` } });
  }

  /**
   * A key's usage on the day of the clock, as the management API shows it (usage over time, which
   * needs no limiter: some tests give the app one that fails), recorded requests included.
   */
  async usage(keyId: string): Promise<UsageOfTheDay> {
    const day = new Date(this.clock()).toISOString().slice(0, 10);
    const range = `granularity=day&from=${day}T00:00:00Z&to=${day}T23:59:59Z`;
    const read = async (query: string) => {
      const res = await this.manage(`/consumer-api-key/${keyId}/usage?${range}${query}`);
      if (res.status !== 200) throw new Error(`usage of ${keyId}: ${res.status} ${await res.text()}`);
      return (await res.json()) as {
        buckets: Omit<UsageOfTheDay, 'endpoints' | 'customers'>[];
        series?: {
          endpoint?: string;
          customerId?: string;
          routeId?: string | null;
          buckets: { requests: number }[];
        }[];
      };
    };
    // The totals first, then each grouping: a flush that lands between two reads then shows in the
    // groupings too, never in the totals alone, so a wait on the totals sees its requests grouped.
    const totals = await read('');
    const byEndpoint = await read('&groupBy=endpoint');
    const byCustomer = await read('&groupBy=customer');
    const byRoute = await read('&groupBy=route');
    const [bucket] = totals.buckets;
    return {
      requests: bucket?.requests ?? 0,
      successful: bucket?.successful ?? 0,
      failed: bucket?.failed ?? 0,
      cost: bucket?.cost ?? 0,
      statusClasses: bucket!.statusClasses,
      outcomes: bucket!.outcomes,
      endpoints: (byEndpoint.series ?? []).map((s) => s.endpoint!),
      customers: Object.fromEntries(
        (byCustomer.series ?? []).map((s) => [s.customerId!, s.buckets[0]?.requests ?? 0]),
      ),
      routes: (byRoute.series ?? []).map((s) => [s.routeId!, s.buckets[0]?.requests ?? 0]),
    };
  }

  /**
   * Resolves once everything the app recorded before the call is stored: a request of a key of its
   * own, sent now, has reached the usage buckets, and a flush writes what was recorded in order. What
   * a flush would change about earlier usage shows by then: read after this instead of sleeping.
   */
  async flushed(): Promise<void> {
    const marker = await this.createKey();
    await fetch(`${this.base}/flush-marker`, { headers: { authorization: `Bearer ${marker.secret}` } });
    await waitFor(
      () => storedMinuteRequestsIn(this.db.db, [marker.id]),
      (n) => n === 1,
      { what: 'a marker request stored' },
    );
  }

  async metric(name: string): Promise<string> {
    const text = await this.metrics.registry.metrics();
    return text
      .split('\n')
      .filter((l) => l.startsWith(name))
      .join('\n');
  }

  /** Shuts the app down as SIGTERM does, then the backend; once, however often it is called. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      if (this.app === undefined) return;
      await this.app.shutdown();
      await this.backend.close().catch(() => undefined);
      rmSync(this.dataDir!, { recursive: true, force: true });
    })();
    return this.stopped;
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
