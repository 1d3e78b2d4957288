/**
 * Composition root: the only reader of process.env. Reads the configuration once, chooses the
 * adapters (embedded SQLite or Postgres; in-process or Redis), builds the app, listens, and drains
 * on SIGTERM. `node dist/src/main.js rotate-secrets` re-encrypts stored secrets instead.
 */
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAdapters } from './adapters.js';
import { buildApp, SHUTDOWN_GRACE_MS } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { decryptSecret } from './keys/secret.js';
import { createLogger } from './ops/logger.js';
import { aggregateWorkerMetrics, workerScrape } from './ops/cluster-metrics.js';
import { Metrics } from './ops/metrics.js';
import { openEmbedded, openPostgres, type DbHandle } from './store/db.js';
import { holdDataDirLock } from './store/data-dir-lock.js';
import { embeddedStartFailure } from './store/disk-space.js';
import { migrate } from './store/migrate.js';
import { KeyRepository } from './store/key-repository.js';
import { rotateSecrets } from './store/rotate-secrets.js';
import { upgradeFromPglite } from './store/upgrade-from-pglite.js';

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
 * Postgres at DATABASE_URL, or the embedded store in DATA_DIR, upgraded first from the PGlite folder of
 * an earlier Tollgate if there is one (`report` says what was done); migrated either way.
 */
async function openDatabase(config: Config, report: (facts: object, message: string) => void): Promise<DbHandle> {
  if (!config.databaseUrl) {
    const upgrade = await upgradeFromPglite(config.dataDir);
    if (upgrade) report({ dataDir: config.dataDir, rows: upgrade.rows, pgliteKeptAt: upgrade.keptAt }, 'embedded database upgraded from PGlite to SQLite; the PGlite folder is kept, unused');
  }
  const handle = config.databaseUrl ? await openPostgres(config.databaseUrl) : await openEmbedded(config.dataDir);
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
  const logger = createLogger(config.logLevel);
  const metrics = new Metrics();
  if (!config.databaseUrl) holdDataDirLock(config.dataDir);

  let rootToken = config.rootToken;
  if (rootToken === undefined) {
    rootToken = 'tgroot_' + randomBytes(32).toString('base64url');
    // Shown once, on the terminal, never through the logger (logs are shipped and kept).
    process.stderr.write(`\nGenerated ROOT_TOKEN (shown once; set ROOT_TOKEN to choose your own):\n  ${rootToken}\n\n`);
  }
  const currentKey = config.secretEncryptionKey ?? embeddedEncryptionKey(config.dataDir);

  const encryptionKeys = [currentKey, ...config.previousEncryptionKeys];
  const db = await openDatabase(config, (facts, message) => logger.info(facts, message));
  await checkEncryptionKeys(db, encryptionKeys);
  const adapters = await buildAdapters(config, db, logger, metrics);
  const app = buildApp({
    config,
    logger,
    metrics,
    adapters,
    rootToken,
    encryptionKeys,
    ...(cluster.isWorker && { scrapeMetrics: workerScrape(metrics.registry) }),
    // scripts/build-console.mjs writes the console beside the compiled server: dist/console.
    consoleDirectory: fileURLToPath(new URL('../console', import.meta.url)),
  });
  const { port, opsPort } = await app.listen();
  logger.info(
    {
      port,
      opsPort,
      upstream: config.upstreamUrl.origin,
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
    // The last word: whatever still waits (a hung server), the process ends within the contract's bound.
    setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown did not finish in time; exiting');
      logger.flush(() => process.exit(1));
    }, config.shutdownTimeoutMs + SHUTDOWN_GRACE_MS).unref();
    app.shutdown().then(
      () => {
        logger.info('stopped');
        logger.flush(() => process.exit(0));
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        logger.flush(() => process.exit(1));
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
    fail('rotate-secrets needs SECRET_ENCRYPTION_KEY (the new key) and SECRET_ENCRYPTION_KEY_PREVIOUS (the old one)');
  }
  if (!config.databaseUrl) holdDataDirLock(config.dataDir);
  const db = await openDatabase(config, (facts, message) => process.stderr.write(`tollgate: ${message} ${JSON.stringify(facts)}\n`));
  try {
    const count = await rotateSecrets(new KeyRepository(db.db), config.secretEncryptionKey, [
      config.secretEncryptionKey,
      ...config.previousEncryptionKeys,
    ]);
    process.stdout.write(`re-encrypted ${count} secrets with the new SECRET_ENCRYPTION_KEY\n`);
  } finally {
    await db.close();
  }
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
} else if (command !== undefined) {
  fail(`unknown command "${command}" (the only command is rotate-secrets)`);
} else if (config.workers > 1 && cluster.isPrimary) {
  superviseWorkers(config);
} else {
  await serve(config).catch((err: unknown) => fail(`start-up failed: ${startFailure(err)}`));
}
