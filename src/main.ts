/**
 * Composition root: the only reader of process.env. Reads the configuration once, chooses the
 * adapters (embedded SQLite or Postgres; in-process or Redis), builds the app, listens, and drains
 * on SIGTERM. Its commands instead: `node dist/src/main.js rotate-secrets` re-encrypts stored secrets;
 * `upgrade-data-dir` copies the PGlite database of an earlier Tollgate into the SQLite store, once.
 */
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildAdapters } from './adapters.js';
import { BillingExportRepository } from './billing/export-repository.js';
import { buildApp, SHUTDOWN_GRACE_MS } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { decryptSecret } from './keys/secret.js';
import { LogDestination } from './ops/log-destination.js';
import { createLogger } from './ops/logger.js';
import { aggregateWorkerMetrics, workerScrape } from './ops/cluster-metrics.js';
import { Metrics } from './ops/metrics.js';
import { PACKAGE_ROOT } from './package-root.js';
import { fileClock } from './ops/test-clock.js';
import { openEmbedded, openPostgres, type DbHandle } from './store/db.js';
import { holdDataDirLock } from './store/data-dir-lock.js';
import { embeddedStartFailure } from './store/disk-space.js';
import { startTracing } from './tracing/start-tracing.js';
import { migrate } from './store/migrate.js';
import { KeyRepository } from './store/key-repository.js';
import { rotateSecrets } from './keys/rotate-secrets.js';
import { upgradeFromPglite } from './store/upgrade-from-pglite.js';
import { WebhookRepository } from './store/webhook-repository.js';

/** The most the last spans may take to reach the collector when the process stops. */
const TRACES_FLUSH_MS = 1000;

function fail(message: string): never {
  process.stderr.write(`tollgate: ${message}\n`);
  process.exit(1);
}

/** Embedded mode keeps its generated encryption key beside the database, readable by the owner only. */
function embeddedEncryptionKey(dataDir: string): Buffer {
  const file = join(dataDir, 'secret-encryption.key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) fail(`${file} does not hold a 32-byte base64 key`);
  return key;
}

/**
 * Postgres at DATABASE_URL, or the embedded store in DATA_DIR (refused while DATA_DIR still holds the
 * PGlite database of an earlier Tollgate: see `upgradeDataDir`); migrated either way.
 */
async function openDatabase(config: Config): Promise<DbHandle> {
  const handle = config.databaseUrl
    ? await openPostgres(config.databaseUrl, config.databaseTimeouts)
    : await openEmbedded(config.dataDir);
  await migrate(handle);
  return handle;
}

/** A wrong SECRET_ENCRYPTION_KEY is refused at start-up, not found out on the first key detail. */
async function checkEncryptionKeys(db: DbHandle, keys: readonly Buffer[]): Promise<void> {
  const sealed = await new KeyRepository(db.db).newestCiphertext();
  if (!sealed) return;
  try {
    decryptSecret(sealed, keys);
  } catch {
    await db.close();
    fail(
      'SECRET_ENCRYPTION_KEY: does not decrypt the stored secrets; set the key they were sealed with ' +
        '(during a rotation, the old one in SECRET_ENCRYPTION_KEY_PREVIOUS)',
    );
  }
}

async function serve(config: Config): Promise<void> {
  const logOutput = new LogDestination();
  const metrics = new Metrics();
  // Before anything logs or serves: the log lines of a traced request carry its trace and span ids.
  const tracing = config.tracing && (await startTracing(config.tracing, metrics));
  const logger = createLogger(config.logLevel, logOutput, tracing?.logFields.bind(tracing));
  if (!config.databaseUrl) holdDataDirLock(config.dataDir);
  // First: a DATA_DIR that cannot be opened is the one line a failed start prints.
  const db = await openDatabase(config);

  let rootToken = config.rootToken;
  if (rootToken === undefined) {
    rootToken = 'tgroot_' + randomBytes(32).toString('base64url');
    // Shown once, on the terminal, never through the logger (logs are shipped and kept).
    process.stderr.write(
      `\nGenerated ROOT_TOKEN (shown once; set ROOT_TOKEN to choose your own):\n  ${rootToken}\n\n`,
    );
  }
  const currentKey = config.secretEncryptionKey ?? embeddedEncryptionKey(config.dataDir);

  const encryptionKeys = [currentKey, ...config.previousEncryptionKeys];
  await checkEncryptionKeys(db, encryptionKeys);
  // Windows, leases, exports and retention all read this one clock; tests move it (config.ts refuses a
  // test clock in production).
  const clock = config.testClockFile ? fileClock(config.testClockFile) : Date.now;
  const adapters = await buildAdapters(config, db, logger, metrics, clock);
  const app = buildApp({
    config,
    logger,
    metrics,
    adapters,
    rootToken,
    encryptionKeys,
    clock,
    ...(cluster.isWorker && { scrapeMetrics: workerScrape(metrics.registry) }),
    // scripts/build-console.mjs and build-portal.mjs write them beside the compiled server.
    consoleDirectory: join(PACKAGE_ROOT, 'dist/console'),
    portalDirectory: join(PACKAGE_ROOT, 'dist/portal'),
  });
  const { port, opsPort, ...extauthPorts } = await app.listen();
  logger.info(
    {
      port,
      opsPort,
      ...extauthPorts,
      upstream: config.upstreamUrl?.origin ?? 'none (routes only)',
      storage: db.kind,
      counters: config.redisUrl || config.redisClusterNodes ? 'redis' : 'in-process',
    },
    'tollgate listening',
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining');
    const mustEndBy = Date.now() + config.shutdownTimeoutMs + SHUTDOWN_GRACE_MS;
    // The last word: whatever still waits (a hung server), the process ends within SHUTDOWN_TIMEOUT_MS + 5 s.
    setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown did not finish in time; exiting');
      logOutput.exit(1);
    }, config.shutdownTimeoutMs + SHUTDOWN_GRACE_MS).unref();
    app
      .shutdown()
      // The last spans go to the collector in what is left of the grace, a second at most: a collector
      // that hangs never holds the process.
      .then(() =>
        tracing?.shutdown(Math.max(0, Math.min(TRACES_FLUSH_MS, mustEndBy - Date.now() - TRACES_FLUSH_MS))),
      )
      .then(
        () => {
          logger.info('stopped');
          logOutput.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          logOutput.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** `WORKERS=N`: N processes share the listeners (node:cluster); Redis keeps their counts as one. */
function superviseWorkers(config: Config): void {
  aggregateWorkerMetrics();
  for (let i = 0; i < config.workers; i++) cluster.fork();
  let stopping = false;
  cluster.on('exit', (worker, code) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    process.stderr.write(`tollgate: worker ${worker.process.pid} exited (${code}); starting another\n`);
    cluster.fork();
  });
  const forward = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.on('SIGTERM', () => forward('SIGTERM'));
  process.on('SIGINT', () => forward('SIGINT'));
}

async function rotate(config: Config): Promise<void> {
  if (!config.secretEncryptionKey || config.previousEncryptionKeys.length === 0) {
    fail(
      'rotate-secrets needs SECRET_ENCRYPTION_KEY (the new key) and SECRET_ENCRYPTION_KEY_PREVIOUS (the old one)',
    );
  }
  if (!config.databaseUrl) holdDataDirLock(config.dataDir);
  const db = await openDatabase(config);
  try {
    const allKeys = [config.secretEncryptionKey, ...config.previousEncryptionKeys];
    // Keys' secrets, billing exports' credentials and webhooks' signing secrets are sealed alike.
    let count = 0;
    for (const store of [
      new KeyRepository(db.db),
      new BillingExportRepository(db.db),
      new WebhookRepository(db.db),
    ])
      count += await rotateSecrets(store, config.secretEncryptionKey, allKeys);
    process.stdout.write(`re-encrypted ${count} secrets with the new SECRET_ENCRYPTION_KEY\n`);
  } finally {
    await db.close();
  }
}

/**
 * Before docs/decisions/0019 the embedded store was PGlite in DATA_DIR/pglite; this copies it into the SQLite
 * store once (src/store/upgrade-from-pglite.ts), with no server on DATA_DIR. A serving process never opens
 * PGlite: a start on such a DATA_DIR is refused with this command's name (docs/decisions/0030).
 */
async function upgradeDataDir(config: Config): Promise<void> {
  if (config.databaseUrl)
    fail(
      'upgrade-data-dir upgrades the embedded store in DATA_DIR, which a Tollgate with DATABASE_URL does not use: unset DATABASE_URL to run it',
    );
  holdDataDirLock(config.dataDir);
  const upgrade = await upgradeFromPglite(config.dataDir);
  if (!upgrade) {
    process.stdout.write(`DATA_DIR ${config.dataDir} holds no PGlite database: nothing to upgrade\n`);
    return;
  }
  const rows = Object.entries(upgrade.rows).map(([table, n]) => `${table} ${n}`);
  process.stdout.write(
    `upgraded DATA_DIR ${config.dataDir} from PGlite to SQLite; rows copied: ${rows.length > 0 ? rows.join(', ') : 'none (an earlier run had copied them)'}\n` +
      `the PGlite folder is kept, unused, at ${upgrade.keptAt}: delete it once you no longer need it\n`,
  );
}

let config: Config;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (err instanceof ConfigError) fail(err.message);
  throw err;
}

/** Embedded mode's failures name DATA_DIR, a full disk as such; Postgres mode's speak for themselves. */
function startFailure(err: unknown): string {
  return config.databaseUrl ? (err as Error).message : embeddedStartFailure(config.dataDir, err);
}

const command = process.argv[2];
if (command === 'rotate-secrets') {
  await rotate(config).catch((err: unknown) => fail(`rotate-secrets failed: ${startFailure(err)}`));
} else if (command === 'upgrade-data-dir') {
  await upgradeDataDir(config).catch((err: unknown) => fail(`upgrade-data-dir failed: ${startFailure(err)}`));
} else if (command !== undefined) {
  fail(`unknown command "${command}" (the commands are rotate-secrets and upgrade-data-dir)`);
} else if (config.workers > 1 && cluster.isPrimary) {
  superviseWorkers(config);
} else {
  await serve(config).catch((err: unknown) => fail(`start-up failed: ${startFailure(err)}`));
}
