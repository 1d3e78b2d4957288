/**
 * A usage batch the database refuses is set aside, not retried ahead of every later batch (decision
 * record 0145): one bad value must never stop usage. Set-aside batches keep their
 * ids and are tried again at each flush, so once the cause is mended each is applied exactly once.
 */
import { loggableError, type Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';

/**
 * Whether the database refused the batch's data itself, so trying it again will fail alike until an
 * operator mends the cause: SQLSTATE class 22 (a data exception: a NUL in text, a number out of range)
 * or 23 (an integrity constraint: a CHECK, NOT NULL, unique or foreign key violation), or P0001 (a
 * trigger's RAISE; SQLite's RAISE() too, src/store/sqlite-database.ts). Anything else (a lost
 * connection, a full disk, a read-only server, a deadlock) is the database's state: retried in order.
 */
export function isRefusedData(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && (/^2[23][0-9A-Z]{3}$/.test(code) || code === 'P0001');
}

/** Reports set-aside batches: an error line naming each once, and the gauge of those still set aside. */
export class SetAsideReport {
  constructor(
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {}

  /** A batch was just set aside. */
  setAside(batchId: string, err: unknown): void {
    this.logger.error(
      { batchId, err: loggableError(err) },
      'usage batch refused by the database: set aside and tried again at each flush; later usage is still applied',
    );
  }

  /** A batch set aside earlier has been applied. */
  applied(batchId: string): void {
    this.logger.info({ batchId }, 'usage batch set aside earlier is applied');
  }

  /** How many batches are set aside now. */
  count(batches: number): void {
    this.metrics.usageBatchesSetAside.set(batches);
  }
}
