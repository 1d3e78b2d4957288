import type { Reservations } from '../reservations/reservations.js';
import type { Response } from 'express';
import type { BillingExporter } from '../billing/billing-exporter.js';
import type { BillingExportRepository } from '../billing/export-repository.js';
import type { LedgerRepository } from '../billing/ledger-repository.js';
import type { LeakSettings, TrustProxy, UsageRetentionSettings } from '../config.js';
import type { KeyChange, KeyEvents } from '../keys/key-events.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Plan } from '../plans/plan.js';
import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import type { AdmissionDeps } from '../proxy/admission.js';
import type { FailureThrottle } from '../proxy/auth-throttle.js';
import type { KeyUseDeps } from '../proxy/key-use.js';
import type { Routing } from '../proxy/routing.js';
import type { AdminTokenRepository } from '../store/admin-token-repository.js';
import type { AuditRepository } from '../store/audit-repository.js';
import type { ConsumerRepository } from '../store/consumer-repository.js';
import type { CreditRepository } from '../store/credit-repository.js';
import type { Db } from '../store/db.js';
import type { FailureLogRepository } from '../usage/failure-log-repository.js';
import type { KeyRepository } from '../store/key-repository.js';
import type { PlanRepository } from '../store/plan-repository.js';
import type { RouteRepository } from '../store/route-repository.js';
import type { StorageHealth } from '../store/storage-health.js';
import type { UsageHistory } from '../usage/history.js';
import type { DeliveryRepository } from '../store/delivery-repository.js';
import type { WebhookRepository } from '../store/webhook-repository.js';
import type { PortalSettingsRepository } from '../store/portal-settings-repository.js';
import type { PortalSessionRepository } from '../store/portal-session-repository.js';
import type { SecretScanningReportRepository } from '../store/secret-scanning-report-repository.js';
import type { UsageTotals } from './resources/usage/schemas.js';
import type { AdminTokenLookup } from './admin-token-lookup.js';
import type { AuditAction } from '../store/audit-actions.js';
import type { ReferenceReach } from './resources/developer-portal/reference-reach.js';

/** Stored usage of one key (flushed and pending), without `rateLimits`, which the limiter knows. */
export interface UsageTotalsReader {
  read(keyId: string): Promise<UsageTotals>;
  /** What a consumer's keys did while they belonged to it; `keyIds`: its keys now (their pending usage). */
  readConsumer(consumerId: string, keyIds: readonly string[]): Promise<UsageTotals>;
}

/**
 * What verify decides and counts with (docs/guides/verify-and-client.md): the proxy's own key cache, limiter,
 * failed-key throttle, route table and usage recorder, so a key is decided and counted alike both ways.
 */
export interface VerifyDeps extends AdmissionDeps, KeyUseDeps {
  readonly routing: Pick<Routing, 'routeIdOf'>;
  /** Counts each decision, and keeps those to settle until `POST /tollgate/verify/settle`. */
  readonly reservations: Pick<Reservations, 'counted' | 'settle'>;
}

export interface ManagementDeps {
  /** Every change runs in a transaction of this database, with its audit entry. */
  readonly db: Db;
  readonly keys: KeyRepository;
  readonly plans: PlanRepository;
  readonly consumers: ConsumerRepository;
  readonly tokens: AdminTokenRepository;
  /** Admin tokens of callers, as authentication reads them (recently read ones kept briefly). */
  readonly tokenLookup: AdminTokenLookup;
  readonly audit: AuditRepository;
  /** Wrong management credentials per client address (shared across replicas with Redis). */
  readonly throttle: FailureThrottle;
  /** TRUST_PROXY: which X-Forwarded-For entries name the client of the audit log and the throttle. */
  readonly trustProxy: TrustProxy;
  readonly usage: UsageTotalsReader;
  /** Usage over time, and how long each granularity is kept. */
  readonly history: Pick<
    UsageHistory,
    | 'forKey'
    | 'forConsumer'
    | 'seriesCount'
    | 'seriesForKey'
    | 'seriesForConsumer'
    | 'forFleet'
    | 'seriesForFleet'
    | 'topConsumers'
  >;
  readonly usageRetention: UsageRetentionSettings;
  /** Where the portal's API reference may be fetched from (config.ts). */
  readonly portalReference: ReferenceReach;
  /**
   * `peek()` gives `usage.rateLimits` without counting a request, `peekBalances()` what balances hold;
   * `syncBalances()` puts a balance just changed in force on every replica.
   */
  readonly limiter: RateLimiter;
  /** Told about every key, plan and consumer change, so every replica's key cache drops what it held. */
  readonly keyEvents: KeyEvents;
  /** [current, ...previous]: secrets are sealed with the first and opened with whichever fits. */
  readonly encryptionKeys: readonly Buffer[];
  readonly rootToken: string;
  /** Applies to keys with no plan bound; `undefined`: such keys are not limited. */
  readonly defaultRateLimit: Plan | undefined;
  /** MANAGEMENT_PREFIX: '' or a path such as `/admin`. */
  readonly prefix: string;
  /** KEY_PREFIX of new secrets, and what a leak report does (docs/guides/leaked-keys.md). */
  readonly leaks: LeakSettings;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Epoch milliseconds: timestamps and rate-limit windows. */
  readonly clock: () => number;
  /** Billing exports (their settings through `audited`) and their run log. */
  readonly billingExports: BillingExportRepository;
  readonly billingRuns: Pick<LedgerRepository, 'runs'>;
  /** Starts a run of an export now (POST …/runs), as the schedule would. */
  readonly billing: Pick<BillingExporter, 'runNow'>;
  /** `POST /tollgate/verify`: the proxy's admission and usage. */
  readonly verification: VerifyDeps;
  /** Told when the database refuses a write, so readiness says so until it takes writes again. */
  readonly storageHealth?: Pick<StorageHealth, 'refused'>;
}

/** The repositories of one transaction. */
export interface Repositories {
  readonly keys: KeyRepository;
  readonly plans: PlanRepository;
  readonly consumers: ConsumerRepository;
  readonly credits: CreditRepository;
  readonly tokens: AdminTokenRepository;
  readonly routes: RouteRepository;
  readonly billingExports: BillingExportRepository;
  readonly webhooks: WebhookRepository;
  readonly deliveries: DeliveryRepository;
  readonly portal: PortalSettingsRepository;
  readonly portalSessions: PortalSessionRepository;
  readonly secretScanningReports: SecretScanningReportRepository;
}

/**
 * What the audit log records of one change of one target: `before`/`after` are the target as the API
 * shows it, never with a secret, hash or ciphertext.
 */
export interface AuditedChange {
  readonly action: AuditAction;
  readonly target: { readonly type: string; readonly id: string };
  readonly before: unknown;
  readonly after: unknown;
}

/**
 * A change a route made: its answer, and what the audit log records of it; `unchanged` records
 * nothing. `preceding`: changes of other targets it made first (the keys and consumers a forced plan
 * delete unbinds, the keys a forced consumer delete detaches), each recorded as an entry of its own, before the change's, so every target's trail shows.
 */
export type Change<T> =
  | { readonly result: T; readonly unchanged: true }
  | (AuditedChange & { readonly result: T; readonly preceding?: readonly AuditedChange[] });

/** What every route file gets: the dependencies and the few things all of them do. */
export interface ManagementContext extends ManagementDeps {
  /** Seals new secrets: the current SECRET_ENCRYPTION_KEY. */
  readonly sealingKey: Buffer;
  /** The route table, over `db`. */
  readonly routes: RouteRepository;
  /** The failure log, over `db`. */
  readonly failureLog: FailureLogRepository;
  /** Webhooks and their delivery logs, read outside a change. */
  readonly webhooks: WebhookRepository;
  readonly deliveries: DeliveryRepository;
  /** The portal's settings and sessions, read outside a change. */
  readonly portal: PortalSettingsRepository;
  readonly portalSessions: PortalSessionRepository;
  now(): Date;
  /** Tells every replica's key cache (or route table); a lost message is covered by the recorded changes and the cache's entry lifetime. */
  announce(change: KeyChange): Promise<void>;
  /**
   * Runs `work` in one transaction with the audit entry of its change and the change's events (the
   * outbox: src/management/change-events.ts): all are stored or none is. A refusal thrown by `work`
   * rolls back and records nothing.
   */
  audited<T>(res: Response, work: (repositories: Repositories) => Promise<Change<T>>): Promise<T>;
}
