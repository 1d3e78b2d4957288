/**
 * Reservations that a later call settles (docs/decisions/0212): verify's `reserve`, and a gateway's
 * decision that reserves units or holds a concurrency place. The decision is the proxy's admission;
 * this keeps what settling it needs, in a record any replica can take once (store.ts), and settles
 * it as the proxy settles a response: `units − reserved` charged by `RateLimiter.settle` to what the
 * reservation was charged to, and the request counted in usage once, at its settled units. A
 * reservation not settled within RESERVATION_TTL_SECONDS keeps its reservation as its cost.
 */
import { randomBytes } from 'node:crypto';
import type { RateLimiter, Reservation } from '../limits/rate-limiter.js';
import type { Config } from '../config.js';
import type { Logger } from '../ops/logger.js';
import { settledWithin } from '../ops/deadline.js';
import type { Metrics } from '../ops/metrics.js';
import type { Admission } from '../proxy/admission.js';
import { countDecision, countKeyUse, type DecidedRequest, type KeyUseDeps } from '../proxy/key-use.js';
import { heldCharge, heldUsage, revived, type Held, type HeldUsage } from './held.js';
import { randomToken, TAKEN_KEPT_MS, takenLater } from './retake.js';
import { InFlight } from './in-flight.js';
import type { InFlightStore, ReservationRecord, ReservationStore } from './store.js';

export interface SettledReservation {
  readonly reservationId: string;
  readonly units: number;
  /** `units − reserved`: negative for a refund. */
  readonly charged: number;
}

export interface ReservationsDeps extends KeyUseDeps {
  readonly limiter: Pick<RateLimiter, 'settle'>;
  readonly metrics: Pick<Metrics, 'settledUnits' | 'unsettledRequests' | 'requestsInFlightWritten'>;
  readonly logger: Logger;
  /**
   * How long a reservation may be settled (RESERVATION_TTL_SECONDS), and how long a place not settled
   * is held (CONCURRENCY_LEASE_SECONDS: as long as a dead replica's places).
   */
  readonly config: Pick<Config, 'reservationTtlSeconds' | 'concurrencyLeaseSeconds'>;
}

/** How often a replica takes out the reservations whose deadline passed, and how many at a time. */
const SWEEP_EVERY_MS = 5_000;
const SWEEP_BATCH = 500;

const ID_PREFIX = 'rsv_';

/** How long a settle call waits for its charge before answering that it is under way. */
const ANSWER_WAIT_MS = 2_000;

/** How long a settle call waits for the replica that admitted the request to charge it. */
const HOLDER_WAIT_MS = 1_000;

/** What a replica asks the one that admitted a request to charge (`charge`). */
interface ChargeAsked {
  readonly id: string;
  readonly units: number;
  readonly charged: NonNullable<Held['charged']>;
  readonly reserved: number;
  readonly nowMs: number;
}

export class Reservations {
  /** This replica's places, by reservation: given back by the settle call or when their lease lapses. */
  private readonly places = new Map<
    string,
    { readonly release: () => void; readonly lapse: NodeJS.Timeout }
  >();
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  /** The token of a sweep Redis has not answered yet (store.ts `takeDue`). */
  private sweepToken: string | undefined;

  /** The proxy's usage-priced requests long in flight; absent: not written anywhere. */
  readonly inFlight: InFlight | undefined;

  constructor(
    private readonly store: ReservationStore,
    private readonly deps: ReservationsDeps,
    inFlightStore?: InFlightStore,
  ) {
    if (inFlightStore !== undefined)
      this.inFlight = new InFlight(inFlightStore, { ...deps, expired: (held) => this.expired(held) });
    store.onFree((id) => this.freePlaces(id));
    store.onAsk((message) => {
      const { id, units, charged, reserved, nowMs } = JSON.parse(message) as ChargeAsked;
      return this.chargeOnce(id, revived(charged, reserved), units, nowMs);
    });
  }

  /**
   * A decision that forwards nothing (verify, a gateway's), counted in usage as the proxy counts a
   * request (`countDecision`): now, unless it is admitted and usage-priced (its usage then waits for
   * the settle call). Resolves the reservation's id when it reserved units to settle or holds places
   * (`release`, kept until settled or lapsed), else undefined.
   */
  async counted(
    admission: Admission,
    request: DecidedRequest,
    durationMs: number,
    release?: () => void,
  ): Promise<string | undefined> {
    const settlement = admission.admitted ? admission.settlement : undefined;
    if (settlement === undefined) countDecision(this.deps, admission, request, durationMs);
    if (!admission.admitted || (settlement === undefined && release === undefined)) return undefined;
    const now = this.deps.clock();
    const id = ID_PREFIX + randomBytes(16).toString('base64url');
    if (release !== undefined) {
      const lapse = setTimeout(
        () => this.freePlaces(id),
        this.deps.config.concurrencyLeaseSeconds * 1_000,
      ).unref();
      this.places.set(id, { release, lapse });
    }
    const key = admission.key;
    const held: Held = {
      reserved: admission.cost,
      ...(settlement !== undefined && {
        settleMax: settlement.settleMax,
        usage: heldUsage(
          key,
          { ...request, customerId: admission.subject ?? request.customerId },
          durationMs,
        ),
        ...(settlement.reservation !== undefined && { charged: heldCharge(settlement.reservation) }),
      }),
    };
    if (held.usage !== undefined) this.deps.lastUse.used(key.id, now);
    const record = {
      id,
      deadlineMs: now + this.deps.config.reservationTtlSeconds * 1_000,
      holder: this.store.replica,
      body: JSON.stringify(held),
    };
    try {
      await this.store.put(record);
      return id;
    } catch (err) {
      // Nobody can settle it: it keeps its reservation as its cost, and its place lapses. Redis may
      // have stored it all the same: counted once it is surely taken out again, never also swept.
      this.deps.logger.error({ err, reqId: request.requestId }, 'a reservation could not be stored');
      void this.takenLater(id, randomToken()).then(() => this.expired(held));
      return undefined;
    }
  }

  /**
   * Settles reservation `id` at `units` (capped at its `settleMax`; ignored for a place alone) and gives
   * back its places. Undefined when it is unknown, settled already or past its deadline (which then
   * keeps its reservation as its cost).
   */
  async settle(id: string, units: number): Promise<SettledReservation | undefined> {
    if (!id.startsWith(ID_PREFIX)) return undefined;
    const token = randomToken();
    let record;
    try {
      record = await this.store.take(id, token, this.deps.clock() + TAKEN_KEPT_MS);
    } catch (err) {
      // Redis may have taken it without its answer reaching here: whoever gets it settles it, once.
      void this.takenLater(id, token)
        .then((late) => late && this.settleTaken(late, units, undefined))
        .catch((late: unknown) =>
          this.deps.logger.error({ err: late, reservationId: id }, 'a settlement Redis never took'),
        );
      throw err;
    }
    return record === undefined ? undefined : this.settleTaken(record, units, ANSWER_WAIT_MS);
  }

  private takenLater(id: string, token: string): Promise<ReservationRecord | undefined> {
    return takenLater(this.store, id, token, this.deps.clock, this.deps.logger);
  }

  /** Settles a record taken; throws when its charge is not done within `answerWithinMs` (if any). */
  private async settleTaken(
    record: ReservationRecord,
    units: number,
    answerWithinMs: number | undefined,
  ): Promise<SettledReservation | undefined> {
    const id = record.id;
    const now = this.deps.clock();
    const held = JSON.parse(record.body) as Held;
    this.store.free(record.holder, id);
    if (record.deadlineMs <= now) {
      this.expired(held);
      return undefined;
    }
    const usage = held.usage;
    if (usage === undefined) return { reservationId: id, units: held.reserved, charged: 0 };
    const settled = Math.min(units, held.settleMax!);
    const charged = held.charged;
    const charging = (
      charged !== undefined && settled !== held.reserved
        ? this.charge(record, charged, held.reserved, settled, now)
        : Promise.resolve()
    ).then(
      () => {
        this.deps.metrics.settledUnits.inc(settled);
        this.count(usage, settled);
      },
      (err: unknown) => {
        // Not charged: it keeps its reservation, as a response that reported nothing readable.
        this.expired(held);
        throw err;
      },
    );
    // Redis hanging: the charge is sent again until Redis takes it (settle-batches.ts), without the
    // caller, who is answered that it is not settled yet.
    if (answerWithinMs !== undefined && !(await settledWithin(charging, answerWithinMs))) {
      charging.catch((err: unknown) =>
        this.deps.logger.error({ err, reservationId: id }, 'a settlement Redis never took'),
      );
      throw new Error(`reservation ${id} is settled once Redis answers`);
    }
    await charging;
    return { reservationId: id, units: settled, charged: settled - held.reserved };
  }

  /**
   * Charges the settlement by the limiter of the replica that admitted the request when it answers:
   * only it knows what it took of each count (the Redis limiter's recovery ledgers), and another's
   * refund would look to it like counts Redis lost. Gone or cut off (no answer within
   * HOLDER_WAIT_MS), here. Either way once: whoever claims the reservation first charges it.
   */
  private async charge(
    record: ReservationRecord,
    charged: NonNullable<Held['charged']>,
    reserved: number,
    units: number,
    nowMs: number,
  ): Promise<void> {
    const reservation = revived(charged, reserved);
    if (record.holder === this.store.replica) return this.deps.limiter.settle(reservation, units, nowMs);
    const asked: ChargeAsked = { id: record.id, units, charged, reserved, nowMs };
    if (await this.store.ask(record.holder, JSON.stringify(asked), HOLDER_WAIT_MS)) return;
    await this.chargeOnce(record.id, reservation, units, nowMs);
  }

  private async chargeOnce(
    id: string,
    reservation: Reservation,
    units: number,
    nowMs: number,
  ): Promise<void> {
    if (await this.store.claim(id)) await this.deps.limiter.settle(reservation, units, nowMs);
  }

  /** Takes out every reservation past its deadline now: each keeps its reservation as its cost. */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        for (;;) {
          // Kept until Redis answers: a sweep whose answer was lost gets what it took at the next.
          this.sweepToken ??= randomToken();
          const now = this.deps.clock();
          const due = await this.store.takeDue(now, SWEEP_BATCH, this.sweepToken, now + TAKEN_KEPT_MS);
          this.sweepToken = undefined;
          for (const record of due) {
            this.store.free(record.holder, record.id);
            this.expired(JSON.parse(record.body) as Held);
          }
          if (due.length < SWEEP_BATCH) break;
        }
      } catch (err) {
        this.deps.logger.warn({ err }, 'sweeping reservations failed; the next sweep tries again');
      } finally {
        this.sweeping = undefined;
      }
    })();
    return this.sweeping;
  }

  start(): void {
    this.inFlight?.start();
    this.sweeper = setInterval(
      () => void this.sweep(),
      Math.min(SWEEP_EVERY_MS, this.deps.config.reservationTtlSeconds * 1_000),
    ).unref();
  }

  /**
   * Stops sweeping and gives back this replica's places. In process (a store not shared), nobody will
   * ever take the reservations still open: they keep their reservations as their costs now, before
   * usage is written for the last time.
   */
  async stop(): Promise<void> {
    await this.inFlight?.stop();
    clearInterval(this.sweeper);
    for (const id of [...this.places.keys()]) this.freePlaces(id);
    if (!this.store.shared) {
      await this.sweeping;
      const open = await this.store.takeDue(
        Number.MAX_SAFE_INTEGER,
        Number.MAX_SAFE_INTEGER,
        randomToken(),
        0,
      );
      for (const record of open) this.expired(JSON.parse(record.body) as Held);
    }
    await this.store.close();
  }

  private freePlaces(id: string): void {
    const held = this.places.get(id);
    if (held === undefined) return;
    this.places.delete(id);
    clearTimeout(held.lapse);
    held.release();
  }

  /** A reservation never settled: counted at its reservation, unsettled. */
  expired(held: Held): void {
    if (held.usage === undefined) return;
    this.deps.metrics.unsettledRequests.inc({ reason: held.reason ?? 'expired' });
    this.count(held.usage, held.reserved, true);
  }

  private count(usage: HeldUsage, cost: number, unsettled = false): void {
    countKeyUse(
      this.deps,
      { id: usage.keyId, consumerId: usage.consumerId ?? undefined },
      usage.endpoint,
      usage.routeId,
      usage.customerId,
      usage.status ?? 200,
      undefined,
      cost,
      usage.durationMs,
      undefined,
      { unsettled },
    );
  }
}
