import type { UsageRetentionSettings } from '../config.js';
import type { Logger } from '../ops/logger.js';
import { GRANULARITIES, type Granularity } from './granularity.js';
import type { FailureLogRepository } from './failure-log-repository.js';
import type { UsageHistoryRepository } from './history-repository.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The oldest instant still kept at `granularity` (epoch ms). */
export function retainedSince(
  settings: UsageRetentionSettings,
  granularity: Granularity,
  nowMs: number,
): number {
  switch (granularity) {
    case 'minute':
      return nowMs - settings.minuteHours * HOUR_MS;
    case 'hour':
      return nowMs - settings.hourDays * DAY_MS;
    case 'day':
      return nowMs - settings.dayDays * DAY_MS;
    case 'month': {
      const d = new Date(nowMs);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - settings.monthMonths, 1);
    }
  }
}

/**
 * Deletes buckets past retention. A bucket goes once it starts before the oldest instant kept, so the
 * API never shows a half-pruned range: it refuses ranges reaching back further (`range_beyond_retention`).
 */
export async function pruneUsage(
  repository: Pick<UsageHistoryRepository, 'prune'>,
  settings: UsageRetentionSettings,
  logger: Logger,
  nowMs = Date.now(),
): Promise<void> {
  for (const granularity of GRANULARITIES) {
    const deleted = await repository.prune(
      granularity,
      new Date(retainedSince(settings, granularity, nowMs)),
    );
    if (deleted > 0) logger.info({ granularity, deleted }, 'usage buckets past retention deleted');
  }
}

/** Deletes failure log entries (and left-out counts) older than FAILURE_LOG_RETENTION_DAYS. */
export async function pruneFailureLog(
  repository: Pick<FailureLogRepository, 'prune'>,
  retentionDays: number,
  logger: Logger,
  nowMs = Date.now(),
): Promise<void> {
  const deleted = await repository.prune(nowMs - retentionDays * DAY_MS);
  if (deleted > 0) logger.info({ deleted }, 'failure log entries past retention deleted');
}
