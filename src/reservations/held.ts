/**
 * What a reservation's record holds (reservations.ts): what its settle call counts in usage, and
 * what the limiter charged, in a form any replica revives to settle it.
 */
import type { Decision, Reservation } from '../limits/rate-limiter.js';
import type { Visitor } from '../limits/visitor.js';
import type { Balance } from '../plans/balance.js';
import { planOf, type LimitRule, type Plan } from '../plans/plan.js';
import type { Scope, Subject } from '../plans/subject.js';

/** A request whose usage waits for its settle call: what `countKeyUse` then records. */
export interface HeldUsage {
  readonly keyId: string;
  readonly consumerId: string | null;
  readonly endpoint: string;
  readonly routeId: string | null;
  readonly customerId?: string;
  readonly durationMs: number;
  /** What the client was answered; absent: 200 (verify's and the gateways' decisions). */
  readonly status?: number;
}

/** A request of `key` whose usage waits in a record, as `countKeyUse` takes it then. */
export function heldUsage(
  key: { readonly id: string; readonly consumerId?: string | null },
  request: {
    readonly path: string;
    readonly routeId: string | null;
    readonly customerId: string | undefined;
  },
  durationMs: number,
  status?: number,
): HeldUsage {
  return {
    keyId: key.id,
    consumerId: key.consumerId ?? null,
    endpoint: request.path,
    routeId: request.routeId,
    ...(request.customerId !== undefined && { customerId: request.customerId }),
    durationMs,
    ...(status !== undefined && { status }),
  };
}

/** A subject as the limiter charged it: its plan's limits (and the whole plan's, when narrowed). */
interface HeldSubject {
  readonly scope: Scope;
  readonly id: string;
  readonly limits: readonly LimitRule[];
  readonly whole?: readonly LimitRule[];
  readonly balance?: Balance;
}

/** What a record's body holds. */
export interface Held {
  readonly reserved: number;
  /** Usage-priced: settled units are capped here, and its usage waits; absent: a place alone. */
  readonly settleMax?: number;
  readonly usage?: HeldUsage;
  /**
   * Why it counts as unsettled if nobody settles it, for tollgate_unsettled_requests_total; absent:
   * `expired` (nobody called to settle it in time).
   */
  readonly reason?: 'replica-gone';
  /** What the limiter charged; absent: no limit or balance applies. */
  readonly charged?: {
    readonly subjects: readonly HeldSubject[];
    readonly visitor?: Visitor;
    readonly admittedMs: number;
  };
}

/**
 * The decision of a reservation settled from its record, not where it was decided (on another
 * replica, or before a restart): counted where the shared limiter counts.
 */
export const SETTLED_ELSEWHERE: Decision = {
  allowed: true,
  limit: undefined,
  balance: undefined,
  states: [],
};

export function heldCharge({ subjects, visitor, admittedMs }: Reservation): NonNullable<Held['charged']> {
  return {
    subjects: subjects.map(({ scope, id, plan, balance }) => ({
      scope,
      id,
      limits: plan.limits,
      ...(plan.whole !== undefined && { whole: plan.whole.limits }),
      ...(balance !== undefined && { balance }),
    })),
    ...(visitor !== undefined && { visitor }),
    admittedMs,
  };
}

/** The reservation as the limiter charged it, from its record: its plans' tags as they were. */
export function revived(charged: NonNullable<Held['charged']>, reserved: number): Reservation {
  const subjects: Subject[] = charged.subjects.map(({ scope, id, limits, whole, balance }) => {
    const plan: Plan = whole === undefined ? planOf(limits) : { ...planOf(limits), whole: planOf(whole) };
    return balance === undefined ? { scope, id, plan } : { scope, id, plan, balance };
  });
  return {
    decision: SETTLED_ELSEWHERE,
    subjects,
    ...(charged.visitor !== undefined && { visitor: charged.visitor }),
    reserved,
    admittedMs: charged.admittedMs,
  };
}
