import type { Logger } from '../ops/logger.js';
import type { AuditRepository } from './audit-repository.js';

const DAY_MS = 86_400_000;

/**
 * Deletes audit entries older than AUDIT_RETENTION_DAYS. Deleting is idempotent and done in small
 * batches, so replicas pruning at the same time only repeat each other's work.
 */
export async function pruneAuditLog(
  audit: Pick<AuditRepository, 'prune'>,
  retentionDays: number,
  logger: Logger,
  now = Date.now(),
): Promise<void> {
  const deleted = await audit.prune(new Date(now - retentionDays * DAY_MS));
  if (deleted > 0) logger.info({ deleted, retentionDays }, 'audit entries past retention deleted');
}
