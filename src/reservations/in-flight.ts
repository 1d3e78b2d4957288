/**
 * Usage-priced requests of the proxy still in flight after WRITTEN_AFTER_MS, written as reservation
 * records (docs/decisions/0224), so that a process that dies holding them counts each once, at its
 * reservation, as unsettled: with Redis, the reservations' sweep of any replica takes a record once its
 * holder stopped pushing its deadline on (CONCURRENCY_LEASE_SECONDS, as for its concurrency places); on
 * a single node, the next start takes what the database still holds. A request that ends takes its
 * record back before it is counted: whoever takes a record counts it. The records of a turn go in one
 * store call; most requests end sooner and cost nothing here but a slot taken and freed.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import type { Held } from './held.js';
import { randomToken, takenLater } from './retake.js';
import type { InFlightStore, ReservationRecord } from './store.js';

/**
 * A request is written once in flight this long, at the next turn: written within the second, so a
 * SIGKILL loses at most the requests of its last second, as it loses the usage of those that ended in it.
 */
const WRITTEN_AFTER_MS = 500;
const TURN_MS = 250;

const ID_PREFIX = 'inf_';

/** A request in flight, as the proxy's exchange shows it. */
export interface InFlightRequest {
  /** `performance.now()` when it arrived. */
  readonly receivedAt: number;
  /** What it counts if its process dies: its reservation, unsettled, with what it was answered so far. */
  held(): Held;
}

export interface InFlightDeps {
  readonly config: Pick<Config, 'concurrencyLeaseSeconds'>;
  readonly metrics: Pick<Metrics, 'requestsInFlightWritten'>;
  readonly logger: Logger;
  readonly clock: () => number;
  /** Counts a record of a process gone (Reservations.expired). */
  readonly expired: (held: Held) => void;
}

/** A request's record: `stored` once its write was answered (else it may or may not be there). */
interface Written {
  readonly id: string;
  stored: boolean;
}

export class InFlight {
  /**
   * Not written yet, each in the slot `open` gave it, free slots taken again. Not a Set: V8 makes every
   * scavenge dear while a long-lived Set or Map takes and drops short-lived objects at this rate (its
   * deleted entries still reach them), which took a fifth of a settled request's CPU
   * (docs/performance.md, "A Set of requests in flight").
   */
  private readonly waiting: (InFlightRequest | undefined)[] = [];
  private readonly freeSlots: number[] = [];
  private readonly written = new Map<InFlightRequest, Written>();
  private writing: Promise<void> | undefined;
  /** Takes of ended requests under way: stopping waits for them, their usage is counted after. */
  private readonly taking = new Set<Promise<boolean>>();
  private turns: NodeJS.Timeout | undefined;
  private pushedMs = 0;
  private failing = false;

  constructor(
    private readonly store: InFlightStore,
    private readonly deps: InFlightDeps,
  ) {}

  /** The request began: the slot to close it with. */
  open(request: InFlightRequest): number {
    const slot = this.freeSlots.pop() ?? this.waiting.length;
    this.waiting[slot] = request;
    return slot;
  }

  /**
   * The request ended: true when it is its caller's to count now; else resolves whether it is (its
   * record taken back) or not (a sweep took it: counted at its reservation, which stays charged).
   */
  close(request: InFlightRequest, slot: number): true | Promise<boolean> {
    // Its slot holds another request once it was written and the slot taken again.
    if (this.waiting[slot] === request) {
      this.free(slot);
      return true;
    }
    const written = this.written.get(request);
    if (written === undefined) return true;
    this.written.delete(request);
    this.deps.metrics.requestsInFlightWritten.set(this.written.size);
    const taking = this.taken(written);
    this.taking.add(taking);
    void taking.then(() => this.taking.delete(taking));
    return taking;
  }

  /** Counts what a process gone left (a single node), then writes every turn. */
  start(): void {
    this.store.left?.().then(
      (records) => {
        for (const record of records) this.deps.expired(JSON.parse(record.body) as Held);
      },
      (err: unknown) =>
        this.deps.logger.error(
          { err },
          'requests in flight when the last process died are counted at the next start',
        ),
    );
    this.turns = setInterval(() => this.turn(), TURN_MS).unref();
  }

  /** Stops writing; the records still open are the sweep's (with Redis) or the next start's. */
  async stop(): Promise<void> {
    clearInterval(this.turns);
    await Promise.all([this.writing, ...this.taking]);
  }

  private async taken(written: Written): Promise<boolean> {
    // A write under way may hold its record: taken after it.
    await this.writing;
    const record = await takenLater(this.store, written.id, randomToken(), this.deps.clock, this.deps.logger);
    // Not there and never known stored: its write never reached the store.
    return record !== undefined || !written.stored;
  }

  private free(slot: number): void {
    this.waiting[slot] = undefined;
    this.freeSlots.push(slot);
  }

  /** One store call: the requests in flight long enough, and, every third of the lease, the deadlines. */
  private turn(): void {
    if (this.writing !== undefined) return;
    const nowMs = this.deps.clock();
    const leaseMs = this.deps.config.concurrencyLeaseSeconds * 1_000;
    const deadlineMs = nowMs + leaseMs;
    const push = this.written.size > 0 && nowMs - this.pushedMs >= leaseMs / 3;
    const open = push ? [...this.written.values()].map((written) => written.id) : [];
    const records: ReservationRecord[] = [];
    const fresh: Written[] = [];
    const old = performance.now() - WRITTEN_AFTER_MS;
    for (let slot = 0; slot < this.waiting.length; slot++) {
      const request = this.waiting[slot];
      if (request === undefined || request.receivedAt > old) continue;
      this.free(slot);
      const written = { id: ID_PREFIX + randomBytes(16).toString('base64url'), stored: false };
      this.written.set(request, written);
      fresh.push(written);
      const body = JSON.stringify(request.held());
      records.push({ id: written.id, deadlineMs, holder: this.store.replica, body });
    }
    if (records.length === 0 && !push) return;
    this.deps.metrics.requestsInFlightWritten.set(this.written.size);
    this.writing = this.store
      .write(records, open, deadlineMs)
      .then(
        () => {
          for (const written of fresh) written.stored = true;
          if (push) this.pushedMs = nowMs;
          this.failing = false;
        },
        (err: unknown) => {
          // Written or not: taken back all the same when its request ends; pushed on at the next turn.
          if (!this.failing) this.deps.logger.warn({ err }, 'requests in flight could not be written');
          this.failing = true;
        },
      )
      .finally(() => (this.writing = undefined));
  }
}
