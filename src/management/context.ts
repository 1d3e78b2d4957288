import type { KeyChange, KeyEvents } from '../keys/key-events.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { RateLimitPolicy } from '../limits/window.js';
import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import type { KeyRepository } from '../store/key-repository.js';
import type { PlanRepository } from '../store/plan-repository.js';
import type { StorageHealth } from '../store/storage-health.js';
import type { UsageTotals } from './schemas.js';

/** Stored usage of one key (flushed and pending), without `rateLimits`, which the limiter knows. */
export interface UsageTotalsReader {
  read(keyId: string): Promise<UsageTotals>;
}

export interface ManagementDeps {
  readonly keys: KeyRepository;
  readonly plans: PlanRepository;
  readonly usage: UsageTotalsReader;
  /** `peek()` gives `usage.rateLimits` without counting a request. */
  readonly limiter: RateLimiter;
  /** Told about every key and plan change, so every replica's key cache drops what it held. */
  readonly keyEvents: KeyEvents;
  /** [current, ...previous]: secrets are sealed with the first and opened with whichever fits. */
  readonly encryptionKeys: readonly Buffer[];
  readonly rootToken: string;
  /** Applies to keys with no plan bound; `undefined`: such keys are not limited. */
  readonly defaultRateLimit: RateLimitPolicy | undefined;
  /** MANAGEMENT_PREFIX: '' or a path such as `/admin`. */
  readonly prefix: string;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Epoch milliseconds: timestamps and rate-limit windows. */
  readonly clock: () => number;
  /** Told when the database refuses a write, so readiness says so until it takes writes again. */
  readonly storageHealth?: Pick<StorageHealth, 'refused'>;
}

/** What every route file gets: the dependencies and the few things all of them do. */
export interface ManagementContext extends ManagementDeps {
  /** Seals new secrets: the current SECRET_ENCRYPTION_KEY. */
  readonly sealingKey: Buffer;
  now(): Date;
  /** Tells every replica's key cache; a lost message is covered by the cache's entry lifetime. */
  announce(change: KeyChange): Promise<void>;
}
