import { join } from 'node:path';
import type { Adapters } from './app.js';
import type { Config } from './config.js';
import { LocalKeyEvents } from './keys/key-events.js';
import { LimitNotices } from './limits/limit-notices.js';
import { MemoryRateLimiter } from './limits/memory-limiter.js';
import type { Logger } from './ops/logger.js';
import type { Metrics } from './ops/metrics.js';
import { AuthThrottle } from './proxy/auth-throttle.js';
import { DatabaseInFlightStore } from './reservations/database-in-flight-store.js';
import type { DbHandle } from './store/db.js';
import { LEFT_FREE_BYTES, UsageJournal } from './usage/journal.js';
import { DatabaseUsageSink } from './usage/database-usage-sink.js';
import { SetAsideReport } from './usage/set-aside.js';
import { UsageRepository } from './usage/usage-repository.js';

/**
 * The embedded store commits locally, with no network round trip, so its usage is written twice a second: a
 * SIGKILL then loses at most half a second of it plus one commit, within the last second that
 * docs/guides/operations.md promises, which once a second was not (measured in docs/decisions/0019).
 */
const EMBEDDED_FLUSH_INTERVAL_MS = 500;
/**
 * Counters in process hold what was spent of credit balances only in memory until it is saved: twice
 * a second, so a SIGKILL gives back at most its last second of spending, like usage above.
 */
const IN_PROCESS_CREDIT_SAVE_INTERVAL_MS = 500;

const mebibytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/**
 * The storage and coordination adapters for a configuration, chosen once: in-process counters and
 * usage written straight to the database without Redis; Redis counters, key events and usage hashes
 * with it. main.ts and the tests build the service through this and `buildApp`, the same way.
 */
export async function buildAdapters(
  config: Config,
  db: DbHandle,
  logger: Logger,
  metrics: Metrics,
  clock: () => number = Date.now,
): Promise<Adapters> {
  const usageRepository = new UsageRepository(db.db, clock);
  if (!config.redisUrl && !config.redisClusterNodes) {
    // Single node: usage that cannot reach the database before exit waits in DATA_DIR for the next start.
    const journal = new UsageJournal(join(config.dataDir, 'usage-journal'));
    const { reservedBytes, missingBytes } = journal.reserve();
    if (missingBytes > 0) {
      logger.warn(
        { dataDir: config.dataDir, reservedBytes, missingBytes },
        `DATA_DIR ${config.dataDir} lacks ${mebibytes(missingBytes)} for the usage journal (it holds ${mebibytes(reservedBytes)} of ` +
          `${mebibytes(reservedBytes + missingBytes)}; the disk's last ${mebibytes(LEFT_FREE_BYTES)} stay free for the database): ` +
          'usage that cannot be written at exit and does not fit there is dropped; free space on that disk',
      );
    }
    const usageSink = new DatabaseUsageSink(usageRepository, journal, new SetAsideReport(logger, metrics));
    const limitNotices = new LimitNotices();
    return {
      db,
      limiter: new MemoryRateLimiter({ notices: limitNotices, clock }),
      limitNotices,
      keyEvents: new LocalKeyEvents(),
      usageRepository,
      usageSink,
      inFlightStore: new DatabaseInFlightStore(db.db),
      // Single-node Postgres keeps the recorder's one second.
      ...(db.kind === 'embedded' && { usageFlushIntervalMs: EMBEDDED_FLUSH_INTERVAL_MS }),
      creditSaveIntervalMs: IN_PROCESS_CREDIT_SAVE_INTERVAL_MS,
      // Batches handed over and not yet known applied; the reader asks Postgres which ones it has.
      pendingUsage: [usageSink],
      background: [],
      failureThrottle: (_name, policy) => new AuthThrottle(policy),
      readinessChecks: {},
      close: () => db.close(),
    };
  }
  const { buildRedisAdapters } = await import('./redis-adapters.js');
  return buildRedisAdapters(config, db, usageRepository, logger, metrics, clock);
}
