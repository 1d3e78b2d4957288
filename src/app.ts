import type { Server } from 'node:http';
import { BillingExporter } from './billing/billing-exporter.js';
import { BillingExportRepository } from './billing/export-repository.js';
import { LedgerRepository } from './billing/ledger-repository.js';
import type { Config } from './config.js';
import { decryptSecret } from './keys/secret.js';
import { KeyCache } from './keys/key-cache.js';
import { LastUseTracker } from './keys/last-use.js';
import type { KeyEvents } from './keys/key-events.js';
import type { LimitNotices } from './limits/limit-notices.js';
import { NoticeWriter } from './limits/notice-writer.js';
import type { RateLimiter } from './limits/rate-limiter.js';
import type { RateLimitPolicy } from './plans/window.js';
import { createConsoleHandler, loadConsoleFiles } from './console/console-files.js';
import { createPortalPagesHandler, pageAssetsOf } from './portal/pages/portal-pages.js';
import { loadBuiltFiles } from './web/built-files.js';
import { SpentCredits } from './credits/spent-credits.js';
import { ExpiryNotices } from './keys/expiry-notices.js';
import { createManagementApp, createManagementContext, type ManagementDeps } from './management/app.js';
import { createPortalHandler } from './portal/app.js';
import { keyExpiringData } from './management/change-events.js';
import { buildOpenApiDocument } from './management/openapi.js';
import { createVerifyRoute } from './management/resources/verify/route.js';
import type { Logger } from './ops/logger.js';
import { settledWithin } from './ops/deadline.js';
import type { Metrics } from './ops/metrics.js';
import { createOpsServer } from './ops/ops-server.js';
import { startExtauth, type ExtauthListeners, type ExtauthPorts } from './extauth/listeners.js';
import { RepeatingTask } from './ops/repeating-task.js';
import { drainHttpServer } from './ops/drain-http.js';
import { listenOn } from './net/listen-on.js';
import { Reservations } from './reservations/reservations.js';
import { MemoryReservationStore, type InFlightStore, type ReservationStore } from './reservations/store.js';
import type { FailureThrottle } from './proxy/auth-throttle.js';
import { createProxyHandler } from './proxy/handler.js';
import { Routing } from './proxy/routing.js';
import { createUpgradeHandler } from './proxy/websocket.js';
import { RouteTable } from './routes/route-table.js';
import { createPublicServer } from './server.js';
import type { DbHandle } from './store/db.js';
import { AdminTokenRepository } from './store/admin-token-repository.js';
import { AdminTokenLookup } from './management/admin-token-lookup.js';
import { AuditRepository } from './store/audit-repository.js';
import { ConsumerRepository } from './store/consumer-repository.js';
import { CreditRepository } from './store/credit-repository.js';
import { pruneAuditLog } from './store/audit-retention.js';
import { KeyRepository } from './store/key-repository.js';
import { PlanRepository } from './store/plan-repository.js';
import { PortalSessionRepository } from './store/portal-session-repository.js';
import { RouteRepository } from './store/route-repository.js';
import { StorageHealth } from './store/storage-health.js';
import { UsageHistory } from './usage/history.js';
import { UsageHistoryRepository } from './usage/history-repository.js';
import { UsageReader } from './usage/reader.js';
import { pruneFailureLog, pruneUsage } from './usage/retention.js';
import { FailureLogRepository } from './usage/failure-log-repository.js';
import { UsageRecorder } from './usage/recorder.js';
import type { UsageRepository } from './usage/usage-repository.js';
import type { PendingUsage, UsageSink } from './usage/usage.js';
import { DeliveryWorker } from './webhooks/delivery-worker.js';

/** The storage and coordination adapters, chosen once by main.ts: embedded, Postgres, Redis. */
export interface Adapters {
  readonly db: DbHandle;
  readonly limiter: RateLimiter;
  /** What the limiter notices (quota thresholds, low and exhausted balances), for the outbox. */
  readonly limitNotices: LimitNotices;
  readonly keyEvents: KeyEvents;
  readonly usageRepository: UsageRepository;
  /** Where the recorder's batches go: Postgres directly, or Redis hashes. */
  readonly usageSink: UsageSink;
  /**
   * How often the recorder hands its usage to the sink (absent: once a second). A SIGKILL loses what was
   * recorded since the last handover plus the write in flight, which must stay within the last second.
   */
  readonly usageFlushIntervalMs?: number;
  /**
   * How often what was spent of credit balances is saved (absent: once a second). Where the limiter is
   * the only other copy (in process), a SIGKILL loses what was spent since the last save plus the write
   * in flight, which must stay within the last second.
   */
  readonly creditSaveIntervalMs?: number;
  /** Usage recorded elsewhere and not yet in Postgres (Redis hashes), beyond this process's own. */
  readonly pendingUsage: readonly PendingUsage[];
  /** Where verify's and the gateways' reservations wait to be settled (absent: in process). */
  readonly reservationStore?: ReservationStore;
  /** Where the proxy's usage-priced requests long in flight are written (absent: nowhere). */
  readonly inFlightStore?: InFlightStore;
  /** Background work that must run while the app serves and finish on shutdown (the usage flusher, the recorded key changes). */
  readonly background: readonly { start(): void; stop(): Promise<void> }[];
  /** Failed authentications per client address under `name`: shared through Redis, else in process. */
  failureThrottle(name: string, policy: RateLimitPolicy): FailureThrottle;
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
  /** The built console (dist/console); without it no console is served, whatever CONSOLE says. */
  readonly consoleDirectory?: string;
  /** Where scripts/build-portal.mjs wrote the developer portal's pages (dist/portal). */
  readonly portalDirectory?: string;
}

export interface App {
  readonly publicServer: Server;
  readonly opsServer: Server;
  /** Listens on the configured ports (0: any free one) and returns the ports bound. */
  listen(): Promise<{ port: number; opsPort: number } & ExtauthPorts>;
  /** SIGTERM: not ready, stop accepting, drain in-flight requests, flush usage, close. */
  shutdown(): Promise<void>;
}

const FAILED_AUTH_LIMIT = { limit: 100, period: 'minute' } as const;
/** Wrong management credentials per client address: fewer than for keys, a root token may be weak. */
const FAILED_ADMIN_AUTH_LIMIT = { limit: 20, period: 'minute' } as const;
/** What shutdown may take beyond SHUTDOWN_TIMEOUT_MS (5 s in docs/guides/operations.md; main.ts enforces it). */
export const SHUTDOWN_GRACE_MS = 4_000;
/** The most a closing step gets once usage is written. */
const CLOSE_STEP_MS = 1_000;

export function buildApp({
  config,
  logger,
  metrics,
  adapters,
  rootToken,
  encryptionKeys,
  clock = Date.now,
  scrapeMetrics = () => metrics.registry.metrics(),
  consoleDirectory,
  portalDirectory,
}: AppOptions): App {
  const keys = new KeyRepository(adapters.db.db);
  const storageHealth = new StorageHealth(adapters.db.db);
  const plans = new PlanRepository(adapters.db.db);
  const recorder = new UsageRecorder(adapters.usageSink, logger, metrics, adapters.usageFlushIntervalMs);
  const usage = new UsageReader(adapters.usageRepository, [...adapters.pendingUsage, recorder]);
  const historyRepository = new UsageHistoryRepository(adapters.db.db);
  /** Retention is counted in days: pruning hourly keeps within an hour of it. */
  const pruneHourly = (name: string, work: () => Promise<void>) =>
    new RepeatingTask(name, 3_600_000, work, logger);
  const failureLog = new FailureLogRepository(adapters.db.db);
  const usageRetention = pruneHourly('usage retention', async () => {
    await pruneUsage(historyRepository, config.usageRetention, logger, clock());
    await pruneFailureLog(failureLog, config.failureLogRetentionDays, logger, clock());
  });
  const lastUse = new LastUseTracker((times) => keys.markUsed(times), logger);
  const spentCredits = new SpentCredits(
    () => adapters.limiter.spentBalances(),
    new CreditRepository(adapters.db.db),
    logger,
    adapters.creditSaveIntervalMs ?? 1_000,
  );
  if (adapters.db.pool) metrics.watchPool(adapters.db.pool);

  const keyCache = new KeyCache({
    lookup: (hash) => keys.findBySecretHash(hash),
    lookupForToken: async (id) => {
      const found = await keys.findForToken(id);
      return (
        found && {
          key: found.key,
          secret: decryptSecret(found.secretCiphertext, encryptionKeys),
          previous: found.previous && {
            secret: decryptSecret(found.previous.ciphertext, encryptionKeys),
            untilMs: found.previous.untilMs,
          },
        }
      );
    },
    events: adapters.keyEvents,
    metrics,
    defaultRateLimit: config.defaultRateLimit,
    clock,
    keyPrefix: config.leaks.keyPrefix,
  });
  // Read at start and again at every change of it, on every replica; the proxy routes by the copy.
  const routeRepository = new RouteRepository(adapters.db.db);
  const routeTable = new RouteTable(() => routeRepository.list(), logger);
  const routing = new Routing({ config, metrics });
  routeTable.onChange((routes) => routing.apply(routes));
  routeTable.follow(adapters.keyEvents);
  const held = { limiter: adapters.limiter, recorder, lastUse, metrics, logger, clock, config };
  const reservationStore = adapters.reservationStore ?? new MemoryReservationStore();
  const reservations = new Reservations(reservationStore, held, adapters.inFlightStore);
  const proxyDeps = {
    config,
    reservations,
    routing,
    keyCache,
    limiter: adapters.limiter,
    recorder,
    lastUse,
    metrics,
    logger,
    clock,
    // Guessing keys from one address stops reaching the database after this many failures.
    authThrottle: adapters.failureThrottle('keys', FAILED_AUTH_LIMIT),
    bodyMatchMaxBytes: config.bodyMatchMaxBytes,
  };
  const proxy = createProxyHandler(proxyDeps);
  const upgrade = createUpgradeHandler(proxyDeps);
  const audit = new AuditRepository(adapters.db.db);
  // Billing exports read only stored usage and lease through the database: the same in both modes.
  const billing = new BillingExporter(adapters.db.db, encryptionKeys, logger, metrics, clock, {
    runEveryMs: config.billingExport.runEverySeconds * 1000,
    settleMs: config.billingExport.settleSeconds * 1000,
  });
  const auditRetention = pruneHourly('audit retention', () =>
    pruneAuditLog(audit, config.auditRetentionDays, logger, clock()),
  );
  // An ended portal session is refused by its expiry alone; its row goes within the hour.
  const portalSessions = new PortalSessionRepository(adapters.db.db);
  const endedSessions = pruneHourly('ended portal sessions', () =>
    portalSessions.pruneEnded(new Date(clock())),
  );
  const managementDeps: ManagementDeps = {
    db: adapters.db.db,
    keys,
    plans,
    consumers: new ConsumerRepository(adapters.db.db),
    tokens: new AdminTokenRepository(adapters.db.db),
    tokenLookup: new AdminTokenLookup(new AdminTokenRepository(adapters.db.db), clock),
    audit,
    throttle: adapters.failureThrottle('management', FAILED_ADMIN_AUTH_LIMIT),
    trustProxy: config.trustProxy,
    usage,
    history: new UsageHistory(historyRepository, usage),
    usageRetention: config.usageRetention,
    portalReference: config.portalReference,
    limiter: adapters.limiter,
    keyEvents: adapters.keyEvents,
    encryptionKeys,
    rootToken,
    defaultRateLimit: config.defaultRateLimit,
    prefix: config.managementPrefix,
    leaks: config.leaks,
    logger,
    metrics,
    clock,
    storageHealth,
    billingExports: new BillingExportRepository(adapters.db.db),
    billingRuns: new LedgerRepository(adapters.db.db),
    billing,
    // Verify decides with the proxy's own admission: one key cache, limiter, throttle and recorder.
    verification: proxyDeps,
  };
  const management = createManagementApp(managementDeps);
  const portalFiles = portalDirectory === undefined ? undefined : loadBuiltFiles(portalDirectory);
  if (portalDirectory !== undefined && !portalFiles)
    logger.warn(
      { directory: portalDirectory },
      'the portal is not built (npm run build): its pages answer 404',
    );
  const portal = createPortalHandler({
    ctx: createManagementContext(managementDeps),
    // Wrong sign-in codes per client address, as many as wrong admin credentials.
    signInThrottle: adapters.failureThrottle('portal', FAILED_ADMIN_AUTH_LIMIT),
    pages: createPortalPagesHandler(config.managementPrefix, portalFiles),
    pageAssets: pageAssetsOf(config.managementPrefix, portalFiles),
  });
  // The outbox is drained by one replica at a time under a lease in the database, in every mode alike.
  const webhookDeliveries = new DeliveryWorker({
    db: adapters.db.db,
    encryptionKeys,
    logger,
    clock,
    expiryNotices: new ExpiryNotices(adapters.db.db, keyExpiringData),
  });
  // Every replica writes what its limiter noticed; the outbox keeps one of each.
  const noticeWriter = new NoticeWriter(adapters.db.db, adapters.limitNotices, logger, clock);
  let serveConsole: ReturnType<typeof createConsoleHandler> | undefined;
  if (config.console && consoleDirectory !== undefined) {
    const files = loadConsoleFiles(consoleDirectory);
    if (!files)
      logger.warn(
        { directory: consoleDirectory },
        'the console is not built (npm run build): its pages answer 404',
      );
    serveConsole = createConsoleHandler(config.managementPrefix, files);
  }
  const publicServer = createPublicServer({
    managementApp: management,
    verify: createVerifyRoute(managementDeps),
    proxy,
    upgrade,
    managementPrefix: config.managementPrefix,
    portal,
    ...(serveConsole && { console: serveConsole }),
  });
  let draining = false;
  // Names the public listener in `servers`: built again once its port is bound.
  let openApi = buildOpenApiDocument({
    prefix: config.managementPrefix,
    publicListener: { host: config.host, port: config.port },
  });
  const opsServer = createOpsServer({
    metrics,
    scrapeMetrics,
    isDraining: () => draining,
    readinessChecks: { database: () => storageHealth.check(), ...adapters.readinessChecks },
    openApiDocument: () => openApi,
  });

  // Gateways' authorization calls: the proxy's own admission, counted as it counts.
  let extauth: ExtauthListeners | undefined;
  return {
    publicServer,
    opsServer,
    async listen() {
      recorder.start();
      lastUse.start();
      spentCredits.start();
      auditRetention.start();
      usageRetention.start();
      endedSessions.start();
      billing.start();
      for (const task of adapters.background) task.start();
      await routeTable.start();
      webhookDeliveries.start();
      noticeWriter.start();
      reservations.start();
      const opsPort = await listenOn(opsServer, config.opsPort, config.host);
      const port = await listenOn(publicServer, config.port, config.host);
      extauth = await startExtauth(proxyDeps, config);
      openApi = buildOpenApiDocument({
        prefix: config.managementPrefix,
        publicListener: { host: config.host, port },
      });
      return { port, opsPort, ...extauth.ports };
    },
    async shutdown() {
      draining = true;
      // SIGTERM ends within SHUTDOWN_TIMEOUT_MS + 5 s whatever Redis and the database do: the drain
      // takes at most the timeout, and every later step gets what is left of the grace.
      const mustEndBy = Date.now() + config.shutdownTimeoutMs + SHUTDOWN_GRACE_MS;
      // Upgraded sockets are outside server.close(): end them, or they hold the drain to its deadline.
      const [drained] = await Promise.all([
        drainHttpServer(publicServer, config.shutdownTimeoutMs),
        upgrade.close(),
        extauth?.close(config.shutdownTimeoutMs),
      ]);
      if (!drained)
        logger.warn(
          { timeoutMs: config.shutdownTimeoutMs },
          'drain deadline reached; closing remaining connections',
        );
      routeTable.stop();
      // Nothing is charged any more: what was spent of credit balances goes to the database first, it is money.
      await settledWithin(spentCredits.stop(), CLOSE_STEP_MS);
      await settledWithin(routing.close(), CLOSE_STEP_MS);
      // Reservations no replica will settle count now; usage gets the longest share: it is billing data.
      await settledWithin(reservations.stop(), CLOSE_STEP_MS);
      // A write attempt can overrun its deadline by a command timeout; the steps after it need a second.
      await recorder.stop(mustEndBy - 3 * CLOSE_STEP_MS);
      await settledWithin(lastUse.stop(), CLOSE_STEP_MS / 2);
      const pruning = [auditRetention, usageRetention, endedSessions];
      for (const task of pruning) task.stop();
      // A run cut short leaves its sends to the next run, under the same ids. Beside it, what the last
      // requests noticed goes to the outbox; one lost here is noticed again by the next request above it.
      // A pruning run going (each runs as the process starts) ends before the database closes, or is
      // cut short by its closing: the next start prunes again.
      await settledWithin(
        Promise.all([billing.stop(), noticeWriter.stop(), ...pruning.map((task) => task.ended())]),
        CLOSE_STEP_MS,
      );
      // A send cut short here is sent again by the next lease holder, with the same webhook-id.
      await settledWithin(webhookDeliveries.stop(), CLOSE_STEP_MS / 2);
      for (const task of adapters.background)
        await settledWithin(task.stop(), Math.max(0, mustEndBy - 1.5 * CLOSE_STEP_MS - Date.now()));
      const opsClosed = new Promise<void>((resolve) => opsServer.close(() => resolve()));
      opsServer.closeAllConnections();
      await opsClosed;
      await settledWithin(
        Promise.all([adapters.limiter.close(), adapters.keyEvents.close()]),
        CLOSE_STEP_MS / 2,
      );
      await settledWithin(adapters.close(), CLOSE_STEP_MS / 2);
    },
  };
}
