import { randomBytes } from 'node:crypto';
import { decryptSecret } from '../keys/secret.js';
import { isoSeconds, windowAt } from '../plans/window.js';
import type { BillingExport } from './billing-export.js';
import type { BillingExportRepository } from './export-repository.js';
import { FORMATS } from './formats/index.js';
import type { LedgerRepository, RunResult, StoredSend } from './ledger-repository.js';
import type { BatchResult } from './receiver-client.js';
import type { SendOutcome } from './send-outcome.js';
import { SUBJECT_USAGE } from './subject-usage-repository.js';
import type { ExportTarget, UsageSend } from './usage-send.js';

/**
 * How long after its bucket ended usage that reaches the store is still exported (as a correction). A
 * run reads the closed buckets of this span, so it bounds each run's read; usage that arrives later
 * still (a store that was down for longer) stays in the store and is not exported (kept on purpose:
 * docs/decisions/0050, addendum).
 */
export const LATE_USAGE_WINDOW_MS = 86_400_000;
/** Requests one run makes at most, and sends it reads at most; the rest wait for the next run. */
export const MAX_REQUESTS_PER_RUN = 5_000;
export const MAX_SENDS_PER_RUN = 20_000;
/** Requests in flight at once, to one receiver. */
const PARALLEL_REQUESTS = 4;

export interface Backoff {
  readonly baseMs: number;
  readonly maxMs: number;
}

/** The wait after the `failures`-th failure in a row: doubling from `baseMs`, at most `maxMs`. */
export const backoffMs = (failures: number, { baseMs, maxMs }: Backoff): number =>
  Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));

export interface RunDeps {
  readonly exports: BillingExportRepository;
  readonly ledger: LedgerRepository;
  readonly receivers: { send(target: ExportTarget, sends: readonly UsageSend[]): Promise<BatchResult> };
  /** [current, ...previous] SECRET_ENCRYPTION_KEY: opens the credential. */
  readonly encryptionKeys: readonly Buffer[];
  readonly clock: () => number;
  /** How long after a bucket ends it closes: the usage of every replica has reached the store by then. */
  readonly settleMs: number;
  readonly backoff: Backoff;
  /** Before each round of sends: false when the lease is lost or the process stops, and sending must end. */
  readonly mayGoOn: () => Promise<boolean>;
  readonly onOutcome?: (outcome: SendOutcome) => void;
}

/** The range of closed buckets a run at `nowMs` reads: those that ended `settleMs` ago or earlier. */
export function closedRange(
  billingExport: BillingExport,
  nowMs: number,
  settleMs: number,
): { closedBefore: number; fromMs: number; toMs: number } {
  const closedBefore = nowMs - settleMs;
  const { interval } = billingExport;
  return {
    closedBefore,
    // A bucket [start, end) is closed when end <= closedBefore, that is when start < the start of the bucket holding closedBefore.
    toMs: windowAt(interval, closedBefore).start,
    // From the bucket the export was created in, within the window of late usage.
    fromMs: Math.max(
      windowAt(interval, billingExport.createdAt.getTime()).start,
      windowAt(interval, closedBefore - LATE_USAGE_WINDOW_MS).start,
    ),
  };
}

const usageSend = (billingExport: BillingExport, send: StoredSend): UsageSend => ({
  ...send,
  subject: billingExport.subject,
  bucketEndMs: windowAt(billingExport.interval, send.bucketStartMs).end,
});

type Unreachable = Extract<SendOutcome, { kind: 'unreachable' }>;

/** What a run ends with: its id, and whether it did anything worth a line in the run log. */
export interface RunSummary extends RunResult {
  readonly runId: string;
  /** The receiver did not answer (or answered 5xx): the export waits before trying again. */
  readonly unreachable: Unreachable | undefined;
}

/**
 * One run of one export, by the replica holding its lease:
 *   1. plan: every closed bucket whose stored units differ from what the export has committed to send
 *      gets the difference as its next revision, written as a send (one transaction, see
 *      LedgerRepository.plan): from here on it is sent under one idempotency id however often it is tried;
 *   2. deliver: every send not yet delivered is sent (unless the receiver was failing and its backoff
 *      has not passed; a run an administrator started does not wait), oldest bucket first, and its
 *      answer recorded; the first sign of a failing receiver ends the run's sending.
 * A replica that dies anywhere in between leaves nothing half done: a plan is committed whole or not at
 * all, and a send delivered but not recorded is sent again under the same id, which the receiver dedupes.
 * Returns undefined when the export no longer exists.
 */
export async function runExport(
  deps: RunDeps,
  exportId: string,
  startedBy: 'schedule' | 'manual',
): Promise<RunSummary | undefined> {
  const { exports, ledger, clock } = deps;
  const configured = await exports.get(exportId);
  if (!configured) return undefined;
  const now = clock();
  const range = closedRange(configured, now, deps.settleMs);
  const runId = 'run_' + randomBytes(12).toString('base64url');
  await ledger.startRun({
    id: runId,
    exportId,
    startedBy,
    startedAt: new Date(now),
    closedBefore: new Date(range.closedBefore),
  });
  let result: RunResult = { planned: 0, delivered: 0, failed: 0, skippedSubjects: [], error: null };
  let unreachable: Unreachable | undefined;
  try {
    const plan = await ledger.plan(exportId, SUBJECT_USAGE[configured.subject], range, new Date(now));
    if (!plan) return undefined;
    const billingExport = plan.billingExport;
    result = { ...result, planned: plan.planned, skippedSubjects: plan.skippedSubjects };
    const waiting = billingExport.deliverAfter !== null && billingExport.deliverAfter.getTime() > now;
    // The receiver named when to come back (Retry-After): no run sends before, not even one started by hand.
    const asked = billingExport.retryAfter !== null && billingExport.retryAfter.getTime() > now;
    if (asked && startedBy === 'manual')
      result = {
        ...result,
        error: `the receiver asked to wait until ${isoSeconds(billingExport.retryAfter!.getTime())} (Retry-After): nothing sent`,
      };
    if (!asked && (startedBy === 'manual' || !waiting)) {
      const delivery = await deliver(deps, billingExport, runId, startedBy === 'manual');
      result = { ...result, delivered: delivery.delivered, failed: delivery.failed };
      unreachable = delivery.unreachable;
    }
  } catch (err) {
    result = { ...result, error: (err as Error).message };
  }
  const idle = result.planned + result.delivered + result.failed === 0 && result.error === null;
  // The log shows runs that did something, and every run an administrator started.
  if (idle && startedBy === 'schedule') await ledger.dropRun(runId);
  else await ledger.finishRun(runId, result, new Date(clock()));
  return { ...result, runId, unreachable };
}

async function deliver(
  deps: RunDeps,
  billingExport: BillingExport,
  runId: string,
  all: boolean,
): Promise<{ delivered: number; failed: number; unreachable: Unreachable | undefined }> {
  const { exports, ledger, clock } = deps;
  const { batchSize } = FORMATS[billingExport.type];
  const limit = Math.min(MAX_SENDS_PER_RUN, MAX_REQUESTS_PER_RUN * batchSize);
  const sends = await ledger.pending(billingExport.id, new Date(clock()), all, limit);
  if (sends.length === 0) return { delivered: 0, failed: 0, unreachable: undefined };
  const target: ExportTarget = {
    exportId: billingExport.id,
    type: billingExport.type,
    url: billingExport.url,
    streamUrl: billingExport.streamUrl ?? billingExport.url,
    eventName: billingExport.eventName,
    credential:
      billingExport.credentialCiphertext === null
        ? undefined
        : decryptSecret(billingExport.credentialCiphertext, deps.encryptionKeys),
  };
  const batches: StoredSend[][] = [];
  for (let i = 0; i < sends.length; i += batchSize) batches.push(sends.slice(i, i + batchSize));
  let delivered = 0;
  let failed = 0;
  let unreachable: Unreachable | undefined;
  let retryAfterMs: number | undefined;
  for (let i = 0; i < batches.length && unreachable === undefined; i += PARALLEL_REQUESTS) {
    if (!(await deps.mayGoOn())) break;
    await Promise.all(
      batches.slice(i, i + PARALLEL_REQUESTS).map(async (batch) => {
        const usages = batch.map((send) => usageSend(billingExport, send));
        const result = await deps.receivers.send(target, usages);
        const at = clock();
        await ledger.recordAttempts(
          runId,
          billingExport,
          usages.map((usage, j) => ({
            send: usage,
            outcome: result.outcomes[j]!,
            retryAt: new Date(at + backoffMs(batch[j]!.attempts + 1, deps.backoff)),
          })),
          new Date(at),
        );
        for (const outcome of result.outcomes) {
          deps.onOutcome?.(outcome);
          if (outcome.kind === 'delivered') delivered++;
          else failed++;
          if (outcome.kind === 'unreachable') unreachable ??= outcome;
        }
        if (result.retryAfterMs !== undefined)
          retryAfterMs = Math.max(retryAfterMs ?? 0, result.retryAfterMs);
      }),
    );
  }
  if (unreachable) {
    const failures = billingExport.deliveryFailures + 1;
    const now = clock();
    const retryAfter = retryAfterMs === undefined ? null : new Date(now + retryAfterMs);
    await exports.deliveryFailed(
      billingExport.id,
      failures,
      new Date(now + Math.max(backoffMs(failures, deps.backoff), retryAfterMs ?? 0)),
      retryAfter,
    );
  } else if (delivered > 0) {
    await exports.deliveryWorked(billingExport.id);
  }
  return { delivered, failed, unreachable };
}
