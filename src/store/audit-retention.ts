import type { Logger } from '../ops/logger.js';
import type { AuditRepository } from './audit-repository.js';

const DAY_MS = 86_400_000;
/** Retention is counted in days: pruning once an hour keeps the log within an hour of it. */
const INTERVAL_MS = 3_600_000;

/**
 * Deletes audit entries older than AUDIT_RETENTION_DAYS, at start and hourly. Deleting is idempotent
 * and done in small batches, so replicas pruning at the same time only repeat each other's work.
 */
export class AuditRetention {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly audit: Pick<AuditRepository, 'prune'>,
    private readonly retentionDays: number,
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

  async prune(now = Date.now()): Promise<void> {
    try {
      const deleted = await this.audit.prune(new Date(now - this.retentionDays * DAY_MS));
      if (deleted > 0) this.logger.info({ deleted, retentionDays: this.retentionDays }, 'audit entries past retention deleted');
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'audit retention pruning failed; will retry');
    }
  }
}
