import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import { RepeatingTask } from '../ops/repeating-task.js';
import type { Db } from '../store/db.js';
import { runExport, type Backoff, type RunSummary } from './export-run.js';
import { BillingExportRepository } from './export-repository.js';
import { LedgerRepository, type RunRecord } from './ledger-repository.js';
import { ReceiverClient } from './receiver-client.js';

export interface BillingExporterOptions {
  /** How often each replica looks for closed buckets and sends waiting (BILLING_EXPORT_RUN_SECONDS). */
  readonly runEveryMs: number;
  /** How long after its end a bucket closes (BILLING_EXPORT_SETTLE_SECONDS). */
  readonly settleMs: number;
  /** A lease not renewed for this long is free: a replica that died holds an export at most this long. */
  readonly leaseMs?: number;
  /** The deadline of one request to a receiver. */
  readonly sendTimeoutMs?: number;
  readonly backoff?: Backoff;
}

/** What an administrator's run came to. */
export type ManualRun = { readonly run: RunRecord } | { readonly busy: true } | { readonly notFound: true };

/** Runs and the delivery log are kept this long (Stripe takes meter events up to 35 days old). */
const KEPT_MS = 35 * 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;

/**
 * Runs every billing export on a schedule, each on whichever replica holds its lease. The lease is kept
 * in the export's own row, by Tollgate's clock: an export's work is all in the database and the
 * receiver, so it needs no Redis, runs the same in embedded mode (one process, which always gets it)
 * and goes on through a Redis outage, when late usage makes corrections. The proxy never waits on it:
 * it reads only the usage the flush has stored (docs/decisions/0050).
 */
export class BillingExporter {
  private readonly exports: BillingExportRepository;
  private readonly ledger: LedgerRepository;
  private readonly receivers: ReceiverClient;
  private readonly task: RepeatingTask;
  /** This process, as a lease holder. */
  private readonly holder = `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  private readonly leaseMs: number;
  private readonly backoff: Backoff;
  /** Each export's run in this process, so a manual run and a scheduled one never overlap here. */
  private readonly running = new Map<string, Promise<unknown>>();
  /** Exports whose receiver is failing: logged once when it starts and once when it ends. */
  private readonly failing = new Set<string>();
  /** The error of each export's last run that failed as a whole: logged when it changes. */
  private readonly runErrors = new Map<string, string>();
  private stopping = false;
  private lastPrune = 0;

  constructor(
    db: Db,
    private readonly encryptionKeys: readonly Buffer[],
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    private readonly clock: () => number,
    private readonly options: BillingExporterOptions,
  ) {
    this.exports = new BillingExportRepository(db);
    this.ledger = new LedgerRepository(db);
    this.receivers = new ReceiverClient(options.sendTimeoutMs ?? 10_000);
    this.leaseMs = options.leaseMs ?? 30_000;
    this.backoff = options.backoff ?? { baseMs: 10_000, maxMs: 900_000 };
    this.task = new RepeatingTask('billing export', options.runEveryMs, () => this.runAll(), logger, {
      runAtStart: false,
    });
  }

  start(): void {
    this.task.start();
  }

  /** Stops the schedule; a run going on ends after the sends in flight. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.task.stop();
    await Promise.allSettled(this.running.values());
    await this.receivers.close();
  }

  /** One scheduled pass over every export; concurrent calls share it. Never rejects. */
  runScheduled(): Promise<void> {
    return this.task.run();
  }

  /**
   * A run an administrator started: after any run of the export going on in this process, with the
   * lease; `busy` when another replica holds it.
   */
  async runNow(exportId: string): Promise<ManualRun> {
    let summary: RunSummary | undefined | 'busy';
    await this.exclusive(exportId, async () => (summary = await this.leased(exportId, 'manual')));
    if (summary === 'busy') return { busy: true };
    const run = summary && (await this.ledger.run(exportId, summary.runId));
    return run ? { run } : { notFound: true };
  }

  private async runAll(): Promise<void> {
    if (this.clock() - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = this.clock();
      await this.ledger.prune(new Date(this.clock() - KEPT_MS));
    }
    for (const id of await this.exports.ids()) {
      if (this.stopping) return;
      await this.exclusive(id, () => this.leased(id, 'schedule'));
    }
  }

  /** Runs `work` once any run of the export this process has going is over. */
  private async exclusive(exportId: string, work: () => Promise<unknown>): Promise<void> {
    const previous = this.running.get(exportId);
    const mine = (previous ?? Promise.resolve()).catch(() => {}).then(work);
    this.running.set(exportId, mine);
    try {
      await mine;
    } finally {
      if (this.running.get(exportId) === mine) this.running.delete(exportId);
    }
  }

  /** A run under the export's lease; 'busy' when another replica holds it. */
  private async leased(
    exportId: string,
    startedBy: 'schedule' | 'manual',
  ): Promise<RunSummary | undefined | 'busy'> {
    let renewedAt = this.clock();
    if (!(await this.exports.takeLease(exportId, this.holder, new Date(renewedAt), this.leaseMs)))
      return 'busy';
    const mayGoOn = async () => {
      if (this.stopping) return false;
      if (this.clock() - renewedAt < this.leaseMs / 3) return true;
      renewedAt = this.clock();
      return this.exports.takeLease(exportId, this.holder, new Date(renewedAt), this.leaseMs);
    };
    try {
      const summary = await runExport(
        {
          exports: this.exports,
          ledger: this.ledger,
          receivers: this.receivers,
          encryptionKeys: this.encryptionKeys,
          clock: this.clock,
          settleMs: this.options.settleMs,
          backoff: this.backoff,
          mayGoOn,
          onOutcome: (outcome) => this.metrics.billingExportSends.inc({ outcome: outcome.kind }),
        },
        exportId,
        startedBy,
      );
      if (summary) this.report(exportId, summary);
      return summary;
    } finally {
      await this.exports.releaseLease(exportId, this.holder).catch(() => {});
    }
  }

  /** Logs when an export's receiver starts failing and when it works again, and each new reason a run failed. */
  private report(exportId: string, summary: RunSummary): void {
    if (summary.error === null) this.runErrors.delete(exportId);
    else if (this.runErrors.get(exportId) !== summary.error) {
      this.runErrors.set(exportId, summary.error);
      this.logger.warn(
        { exportId, runId: summary.runId, err: summary.error },
        'billing export run failed; the next run tries again',
      );
    }
    if (summary.unreachable) {
      if (!this.failing.has(exportId)) {
        this.failing.add(exportId);
        const { status, error } = summary.unreachable;
        this.logger.warn(
          { exportId, runId: summary.runId, status, err: error },
          'billing export receiver is failing; its sends wait and are retried with backoff under the same ids',
        );
      }
    } else if (summary.delivered > 0 && this.failing.delete(exportId)) {
      this.logger.info({ exportId, runId: summary.runId }, 'billing export receiver takes sends again');
    }
  }
}
