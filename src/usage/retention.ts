import type { Logger } from '../ops/logger.js';
import { GRANULARITIES, type Granularity } from './granularity.js';
import type { UsageHistoryRepository } from './history-repository.js';

/** How long each granularity is kept: minutes and hours in hours and days, days in days, months in months. */
export interface UsageRetentionSettings {
  readonly minuteHours: number;
  readonly hourDays: number;
  readonly dayDays: number;
  readonly monthMonths: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const INTERVAL_MS = 3_600_000;

/** The oldest instant still kept at `granularity` (epoch ms). */
export function retainedSince(settings: UsageRetentionSettings, granularity: Granularity, nowMs: number): number {
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
 * Deletes buckets past retention at start and hourly. A bucket is deleted once it starts before the
 * oldest instant kept, so the API never shows a half-pruned range: it refuses ranges reaching back
 * further (`range_beyond_retention`).
 */
export class UsageRetention {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly repository: Pick<UsageHistoryRepository, 'prune'>,
    private readonly settings: UsageRetentionSettings,
    private readonly logger: Logger,
  ) {}

  start(): void {
    void this.prune();
    this.timer = setInterval(() => void this.prune(), INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async prune(nowMs = Date.now()): Promise<void> {
    try {
      for (const granularity of GRANULARITIES) {
        const deleted = await this.repository.prune(granularity, new Date(retainedSince(this.settings, granularity, nowMs)));
        if (deleted > 0) this.logger.info({ granularity, deleted }, 'usage buckets past retention deleted');
      }
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'usage retention pruning failed; will retry');
    }
  }
}
