/**
 * Sends the outbox's events to the webhooks subscribed to them, from one replica at a time (the
 * `webhooks` lease in the database), so that events survive the restart of any replica, of Redis and
 * of the database: every step is a row, and a step a dead replica left unfinished is taken up again.
 *
 * Each tick (every second) the lease holder
 *   1. emits what is due by time alone (`key.expiring`, once a minute),
 *   2. fans new events out into one delivery per subscribed webhook,
 *   3. claims due deliveries (at most a few per webhook, so a dead receiver cannot hold back the
 *      others) and sends them without waiting for the answers: a claim moves the delivery's next
 *      attempt past the send's deadline, so a sender that dies leaves it due again then;
 *   4. records each outcome in one transaction with the webhook's failure run, which disables a
 *      webhook (with an audit entry by `system`) once none of its attempts succeeded for 3 days.
 * Deliveries are at least once: an attempt whose outcome was not recorded is sent again, with the same
 * `webhook-id`, so a receiver that dedupes by it sees each event once.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { decryptSecret } from '../keys/secret.js';
import type { Logger } from '../ops/logger.js';
import { RepeatingTask } from '../ops/repeating-task.js';
import { AuditRepository, generateAuditId } from '../store/audit-repository.js';
import type { Db } from '../store/db.js';
import { DeliveryRepository, type DueDelivery } from '../store/delivery-repository.js';
import { Lease } from '../store/lease.js';
import { Outbox } from '../store/outbox.js';
import { WebhookRepository, type WebhookRow } from '../store/webhook-repository.js';
import { DISABLE_AFTER_MS, nextAttemptAt, RETRY_SCHEDULE_MS } from './retry-schedule.js';
import { webhookAudit } from './webhook-audit.js';
import { DELIVERY_TIMEOUT_MS, WebhookSender, type AttemptResult } from './webhook-sender.js';

export interface DeliveryWorkerOptions {
  readonly db: Db;
  /** [current, ...previous] SECRET_ENCRYPTION_KEY: opens the webhooks' signing secrets. */
  readonly encryptionKeys: readonly Buffer[];
  readonly logger: Logger;
  /** Epoch milliseconds. */
  readonly clock?: () => number;
  /** Events due by time alone, emitted by the lease holder once every `noticeIntervalMs`. */
  readonly expiryNotices?: { emitDue(now: Date): Promise<unknown> };
  readonly intervalMs?: number;
  /** Offsets after the first attempt (tests shorten them; production keeps RETRY_SCHEDULE_MS). */
  readonly retrySchedule?: readonly number[];
  readonly disableAfterMs?: number;
  readonly timeoutMs?: number;
  /** How long a holder that stopped renewing keeps others out. */
  readonly leaseTtlMs?: number;
  readonly noticeIntervalMs?: number;
  /** Sends in flight at once, in all and per webhook. */
  readonly maxInFlight?: number;
  readonly maxInFlightPerWebhook?: number;
  /** Events and their delivery logs are kept this long (pending deliveries longer). */
  readonly retentionMs?: number;
}

export const WEBHOOK_LEASE = 'webhooks';
const DAY_MS = 86_400_000;
/** Events fanned out per transaction, and transactions per tick. */
const FAN_OUT_BATCH = 500;
const FAN_OUT_BATCHES = 10;
/** A claim outlasts the send's deadline by this much before the delivery is given up as lost. */
const CLAIM_MARGIN_MS = 5_000;
const PRUNE_INTERVAL_MS = 3_600_000;

export class DeliveryWorker {
  private readonly db: Db;
  private readonly logger: Logger;
  private readonly clock: () => number;
  private readonly lease: Lease;
  private readonly sender: WebhookSender;
  private readonly ticks: RepeatingTask;
  private readonly options: Required<
    Omit<DeliveryWorkerOptions, 'db' | 'logger' | 'clock' | 'expiryNotices' | 'encryptionKeys'>
  >;
  /** Sends whose outcome is not recorded yet, by delivery id, with their webhook. */
  private readonly inFlight = new Map<string, { webhookId: string; done: Promise<void> }>();
  private lastNoticesAt = -Infinity;
  private lastPruneAt = -Infinity;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  /** A round of `sendDue` under way (one at a time), and whether another is wanted once it ends. */
  private sending: Promise<void> | undefined;
  private sendAgain = false;
  /** Logs once per run of failures, not once a second. */
  private failing = false;

  constructor(private readonly deps: DeliveryWorkerOptions) {
    this.db = deps.db;
    this.logger = deps.logger;
    this.clock = deps.clock ?? Date.now;
    this.options = {
      intervalMs: deps.intervalMs ?? 1_000,
      retrySchedule: deps.retrySchedule ?? RETRY_SCHEDULE_MS,
      disableAfterMs: deps.disableAfterMs ?? DISABLE_AFTER_MS,
      timeoutMs: deps.timeoutMs ?? DELIVERY_TIMEOUT_MS,
      leaseTtlMs: deps.leaseTtlMs ?? 10_000,
      noticeIntervalMs: deps.noticeIntervalMs ?? 60_000,
      maxInFlight: deps.maxInFlight ?? 32,
      maxInFlightPerWebhook: deps.maxInFlightPerWebhook ?? 4,
      retentionMs: deps.retentionMs ?? 30 * DAY_MS,
    };
    this.lease = new Lease(
      this.db,
      WEBHOOK_LEASE,
      `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
      this.options.leaseTtlMs,
      this.clock,
    );
    this.sender = new WebhookSender(this.options.timeoutMs);
    this.ticks = new RepeatingTask(
      'webhook deliveries',
      this.options.intervalMs,
      () => this.tick(),
      this.logger,
      { runAtStart: false },
    );
  }

  start(): void {
    this.ticks.start();
  }

  /** Takes no more work, hands the lease over and waits for the sends in flight; once, however often called. */
  stop(): Promise<void> {
    this.stopping ??= this.stopOnce();
    return this.stopping;
  }

  private async stopOnce(): Promise<void> {
    this.stopped = true;
    this.ticks.stop();
    // Joins a tick in progress (a new one returns at once).
    await this.ticks.run();
    // Another replica may take over at once: what is in flight here stays claimed until it is recorded.
    await this.lease.release().catch(() => {});
    await this.settled();
    await this.sender.close();
  }

  /** One tick now (tests); joins one in progress. */
  runOnce(): Promise<void> {
    return this.ticks.run();
  }

  /** Resolves once every send started so far has its outcome recorded (tests). */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight.values()].map((send) => send.done));
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      if (!(await this.lease.acquire())) {
        // Whoever holds it looks for expiry notices; this replica does at once if it takes over.
        this.lastNoticesAt = -Infinity;
        return;
      }
      const now = this.clock();
      if (this.deps.expiryNotices && now - this.lastNoticesAt >= this.options.noticeIntervalMs) {
        await this.deps.expiryNotices.emitDue(new Date(now));
        this.lastNoticesAt = now;
      }
      await this.fanOut(new Date(now));
      if (now - this.lastPruneAt >= PRUNE_INTERVAL_MS) {
        await this.prune(new Date(now));
        this.lastPruneAt = now;
      }
      await this.sendRound();
      if (this.failing) this.logger.info('webhook deliveries work again');
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        this.logger.warn(
          { err: (err as Error).message },
          'webhook deliveries paused: the database is unavailable; events wait in the outbox',
        );
      this.failing = true;
    }
  }

  private async fanOut(now: Date): Promise<void> {
    for (let i = 0; i < FAN_OUT_BATCHES; i++) {
      const fanned = await this.db
        .transaction()
        .execute((trx) => new DeliveryRepository(trx).fanOut(now, FAN_OUT_BATCH));
      if (fanned < FAN_OUT_BATCH) return;
    }
  }

  private async prune(now: Date): Promise<void> {
    const events = await new DeliveryRepository(this.db).prune(
      new Date(now.getTime() - this.options.retentionMs),
    );
    await new Outbox(this.db).pruneOnce(now);
    if (events > 0) this.logger.info({ events }, 'pruned delivered events and their delivery logs');
  }

  /**
   * Rounds of `sendDue`, one at a time: on each tick, and whenever a send's outcome is recorded, so that
   * a webhook with a backlog gets its next delivery as soon as one of its four is done rather than on
   * the next tick (four a second). Asked for while one runs, it runs once more after it.
   */
  private sendRound(): Promise<void> {
    if (this.sending !== undefined) {
      this.sendAgain = true;
      return this.sending;
    }
    this.sending = (async () => {
      try {
        do {
          this.sendAgain = false;
          if (this.stopped || !(await this.lease.acquire())) return;
          await this.sendDue(new Date(this.clock()));
        } while (this.sendAgain);
      } finally {
        this.sending = undefined;
      }
    })();
    return this.sending;
  }

  /** Claims the due deliveries there is room for and starts sending them. */
  private async sendDue(now: Date): Promise<void> {
    const { maxInFlight, maxInFlightPerWebhook, timeoutMs } = this.options;
    if (this.inFlight.size >= maxInFlight) return;
    const deliveries = new DeliveryRepository(this.db);
    const perWebhook = new Map<string, number>();
    for (const { webhookId } of this.inFlight.values())
      perWebhook.set(webhookId, (perWebhook.get(webhookId) ?? 0) + 1);
    for (const delivery of await deliveries.due(now, maxInFlightPerWebhook, maxInFlight)) {
      if (this.inFlight.size >= maxInFlight || this.stopped) return;
      const busy = perWebhook.get(delivery.webhookId) ?? 0;
      if (busy >= maxInFlightPerWebhook) continue;
      if (!(await deliveries.claim(delivery, now, new Date(now.getTime() + timeoutMs + CLAIM_MARGIN_MS))))
        continue;
      perWebhook.set(delivery.webhookId, busy + 1);
      const done = this.attempt(delivery).finally(() => {
        this.inFlight.delete(delivery.id);
        // A failure here (the database) waits for the next tick, which logs it.
        this.sendRound().catch(() => {});
      });
      this.inFlight.set(delivery.id, { webhookId: delivery.webhookId, done });
    }
  }

  /** Sends one claimed delivery and records what came of it; never rejects. */
  private async attempt(delivery: DueDelivery): Promise<void> {
    const at = new Date(this.clock());
    let result: AttemptResult;
    try {
      const secret = decryptSecret(delivery.secretCiphertext, this.deps.encryptionKeys);
      const { url, eventId, payload, webhookId } = delivery;
      result = await this.sender.send(url, secret, eventId, payload, at, webhookId);
    } catch (err) {
      result = { delivered: false, status: null, error: (err as Error).message };
    }
    const first = delivery.firstAttemptAt ?? at;
    const next = result.delivered
      ? null
      : nextAttemptAt(first.getTime(), this.clock(), this.options.retrySchedule);
    try {
      const disabled = await this.db.transaction().execute(async (trx) => {
        const outcome = { at, ...result, nextAttemptAt: next === null ? null : new Date(next) };
        if (!(await new DeliveryRepository(trx).record(delivery, outcome))) return undefined;
        const webhooks = new WebhookRepository(trx);
        if (result.delivered) {
          await webhooks.succeeded(delivery.webhookId);
          return undefined;
        }
        const change = await webhooks.failed(
          delivery.webhookId,
          at,
          this.options.disableAfterMs,
          disabledReason,
        );
        if (change) await new AuditRepository(trx).insert([disableEntry(change, at)]);
        return change?.after;
      });
      if (disabled)
        this.logger.warn(
          { webhookId: disabled.id, reason: disabled.disabledReason },
          'webhook disabled after failing deliveries',
        );
    } catch (err) {
      // The claim expires and the delivery is sent again: at least once, with the same webhook-id.
      this.logger.warn(
        { deliveryId: delivery.id, err: (err as Error).message },
        'webhook delivery outcome not recorded; it will be sent again',
      );
    }
  }
}

function disabledReason(failingSince: Date): string {
  return `No delivery succeeded since ${failingSince.toISOString()}: disabled after 3 days of failures. Enable it again with PATCH {"enabled": true}.`;
}

/** The audit entry of a webhook Tollgate disabled: by `system`, in no request. */
function disableEntry(change: { before: WebhookRow; after: WebhookRow }, at: Date) {
  return {
    id: generateAuditId(),
    time: at,
    actor: { type: 'system' as const },
    action: 'webhook.disable' as const,
    target: { type: 'webhook', id: change.after.id },
    requestId: '',
    clientAddress: '',
    changes: {
      before: JSON.stringify(webhookAudit(change.before)),
      after: JSON.stringify(webhookAudit(change.after)),
    },
  };
}
