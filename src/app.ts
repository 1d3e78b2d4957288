import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import { KeyCache } from './keys/key-cache.js';
import type { KeyEvents } from './keys/key-events.js';
import type { RateLimiter } from './limits/rate-limiter.js';
import { createManagementApp } from './management/app.js';
import { buildOpenApiDocument } from './management/openapi.js';
import type { Logger } from './ops/logger.js';
import type { Metrics } from './ops/metrics.js';
import { createOpsServer } from './ops/ops-server.js';
import { AuthThrottle } from './proxy/auth-throttle.js';
import { createProxyHandler } from './proxy/handler.js';
import { createUpgradeHandler } from './proxy/websocket.js';
import { createPublicServer } from './server.js';
import type { DbHandle } from './store/db.js';
import { ping } from './store/db.js';
import { KeyRepository, PlanRepository } from './store/repositories.js';
import { UsageReader } from './usage/reader.js';
import { UsageRecorder } from './usage/recorder.js';
import type { UsageRepository } from './usage/usage-repository.js';
import type { PendingUsage, UsageSink } from './usage/usage.js';

/** The storage and coordination adapters, chosen once by main.ts: embedded, Postgres, Redis. */
export interface Adapters {
  readonly db: DbHandle;
  readonly limiter: RateLimiter;
  readonly keyEvents: KeyEvents;
  readonly usageRepository: UsageRepository;
  /** Where the recorder's batches go: Postgres directly, or Redis hashes. */
  readonly usageSink: UsageSink;
  /** Usage recorded elsewhere and not yet in Postgres (Redis hashes), beyond this process's own. */
  readonly pendingUsage: readonly PendingUsage[];
  /** Background work that must run while the app serves and finish on shutdown (the usage flusher). */
  readonly background: readonly { start(): void; stop(): Promise<void> }[];
  /** Readiness checks besides the database (Redis). */
  readonly readinessChecks: Readonly<Record<string, () => Promise<unknown>>>;
  /** Closes connections once everything else has stopped. */
  close(): Promise<void>;
}

export interface AppOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly adapters: Adapters;
  readonly rootToken: string;
  /** [current, ...previous] SECRET_ENCRYPTION_KEY. */
  readonly encryptionKeys: readonly Buffer[];
  readonly clock?: () => number;
  /** What a scrape of the ops port returns; default: this process's registry (WORKERS>1 sums all workers). */
  readonly scrapeMetrics?: () => Promise<string>;
}

export interface App {
  readonly publicServer: Server;
  readonly opsServer: Server;
  /** Listens on the configured ports (0: any free one) and returns the ports bound. */
  listen(): Promise<{ port: number; opsPort: number }>;
  /** SIGTERM: not ready, stop accepting, drain in-flight requests, flush usage, close. */
  shutdown(): Promise<void>;
}

const FAILED_AUTH_LIMIT = { limit: 100, period: 'minute' } as const;

export function buildApp({
  config,
  logger,
  metrics,
  adapters,
  rootToken,
  encryptionKeys,
  clock = Date.now,
  scrapeMetrics = () => metrics.registry.metrics(),
}: AppOptions): App {
  const keys = new KeyRepository(adapters.db.db);
  const plans = new PlanRepository(adapters.db.db);
  const recorder = new UsageRecorder(adapters.usageSink, logger, metrics);
  const usage = new UsageReader(adapters.usageRepository, [...adapters.pendingUsage, recorder]);
  if (adapters.db.pool) metrics.watchPool(adapters.db.pool);

  const keyCache = new KeyCache({
    lookup: (hash) => keys.findBySecretHash(hash),
    events: adapters.keyEvents,
    metrics,
    defaultRateLimit: config.defaultRateLimit,
    clock,
  });
  const proxyDeps = {
    config,
    keyCache,
    limiter: adapters.limiter,
    recorder,
    metrics,
    logger,
    clock,
    // Guessing keys from one address stops reaching the database after this many failures.
    authThrottle: new AuthThrottle(FAILED_AUTH_LIMIT),
  };
  const proxy = createProxyHandler(proxyDeps);
  const upgrade = createUpgradeHandler(proxyDeps);
  const management = createManagementApp({
    keys,
    plans,
    usage,
    limiter: adapters.limiter,
    keyEvents: adapters.keyEvents,
    encryptionKeys,
    rootToken,
    defaultRateLimit: config.defaultRateLimit,
    prefix: config.managementPrefix,
    logger,
    metrics,
    clock,
  });
  const publicServer = createPublicServer({
    managementApp: management,
    proxy,
    upgrade,
    managementPrefix: config.managementPrefix,
  });

  let draining = false;
  const openApi = buildOpenApiDocument({ prefix: config.managementPrefix });
  const opsServer = createOpsServer({
    metrics,
    scrapeMetrics,
    isDraining: () => draining,
    readinessChecks: { database: () => ping(adapters.db.db), ...adapters.readinessChecks },
    openApiDocument: () => openApi,
  });

  const listenOn = (server: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, config.host, () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });

  return {
    publicServer,
    opsServer,
    async listen() {
      recorder.start();
      for (const task of adapters.background) task.start();
      const opsPort = await listenOn(opsServer, config.opsPort);
      const port = await listenOn(publicServer, config.port);
      return { port, opsPort };
    },
    async shutdown() {
      draining = true;
      const closed = new Promise<void>((resolve) => publicServer.close(() => resolve()));
      // Idle keep-alive connections would hold close() open; busy ones finish their request first.
      publicServer.closeIdleConnections();
      // Upgraded sockets are outside server.close(): end them, or they hold the drain to its deadline.
      await upgrade.close();
      const deadline = new Promise<'timeout'>((resolve) => setTimeout(resolve, config.shutdownTimeoutMs, 'timeout').unref());
      if ((await Promise.race([closed, deadline])) === 'timeout') {
        logger.warn({ timeoutMs: config.shutdownTimeoutMs }, 'drain deadline reached; closing remaining connections');
        publicServer.closeAllConnections();
      }
      await proxy.close();
      await recorder.stop();
      for (const task of adapters.background) await task.stop();
      const opsClosed = new Promise<void>((resolve) => opsServer.close(() => resolve()));
      opsServer.closeAllConnections();
      await opsClosed;
      await adapters.limiter.close();
      await adapters.keyEvents.close();
      await adapters.close();
    },
  };
}
