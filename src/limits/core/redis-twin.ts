import type { Algorithm, LimitRule } from '../../plans/plan.js';
import type { RedisClient } from '../../redis/connect.js';

/**
 * One limit of a consume call (consume-script.ts), by its algorithm's own terms: its twin's
 * (`<algorithm>.lua.ts`), which its Lua functions read by name.
 */
export interface ConsumeLimit {
  readonly algorithm: Algorithm;
  readonly limit: number;
}

/** A window's count, or a sliding limit's `slot` of it (a string: the script names a hash field by it), expiring at `expiresAt`. */
export interface WindowLimit extends ConsumeLimit {
  readonly expiresAt: number;
  readonly slot?: string;
}

/** One count a settlement charges (settle-script.ts), by its twin's `settled`: a sliding limit's slot, a token bucket's terms. */
export interface SettleLimit {
  readonly algorithm: Algorithm;
}

/**
 * Which machinery of the Redis limiter a count goes through, whatever its algorithm: a window's (leased,
 * kept by recovery/window-ledger.ts), a token bucket's (leased unless per visitor, recovery/bucket-ledger.ts)
 * or a concurrency limit's places (pooled per replica, concurrency-places.ts; recovery/places-ledger.ts).
 */
export type CountKind = 'window' | 'bucket' | 'places';

/** Where a count's terms at a time begin and end, and when it resets: written in place, so a span allocates no record for them. */
export interface SpanTerms {
  /** When its window or slot began (-Infinity: no window); the window in a fixed limit's count name. */
  start: number;
  /** When it ends (Infinity: no window): the span of its count changes then. */
  end: number;
  /** When it resets, as a span first knows it. */
  reset: number;
}

/** A count without a window (a token bucket's, a concurrency limit's): the same for ever, reset as first known at `nowMs`. */
export function noWindow(at: SpanTerms, nowMs: number): void {
  at.start = -Infinity;
  at.end = Infinity;
  at.reset = nowMs;
}

/** Where callers that want a count's terms alone let its span be written (never read). */
export const UNREAD: SpanTerms = { start: 0, end: 0, reset: 0 };

/** The replica a count's places and leased units are held by (concurrency-places.ts). */
export interface Holder {
  readonly replica: string;
  readonly leaseMs: number;
}

/** No replica: terms that hold nothing (a settlement's, a plan switch's). */
export const NO_HOLDER: Holder = { replica: '', leaseMs: 0 };

/**
 * One algorithm as the Redis limiter knows it, beside its Lua (core/<algorithm>.lua.ts), so that the
 * dispatchers (consume-script.ts, settle-script.ts, redis-settlement.ts, redis-states.ts,
 * limit-registry.ts, plan-switches.ts) name no algorithm: algorithms.ts has one per algorithm.
 */
export interface RedisTwin {
  /** Its Lua functions, ending with its line in the scripts' `ALGORITHMS` table (`lost`, `read`, `charge`, …). */
  readonly lua: string;
  readonly kind: CountKind;
  /** Its terms in a consume call at `nowMs`, held by `holder` (a span's: limit-registry.ts); `at` gets its window. */
  span(rule: LimitRule, nowMs: number, holder: Holder, at: SpanTerms): ConsumeLimit;
  /** What a settlement charges of a count charged with terms `l` (undefined: nothing, settle-script.ts). */
  settled(l: ConsumeLimit): SettleLimit | undefined;
  /** Its reset from the oldest slot a consume call's reply names (undefined: the span's own stays). */
  readonly resetOf?: (rule: LimitRule, oldest: number) => number;
  /** Whether a quiet span may be forgotten without settling its leases, given the reset its count had. */
  over(resetMs: number, nowMs: number): boolean;
  /** Its count at `count` read as its core state (undefined: nothing counted): what `peek` works out. */
  stored(client: RedisClient, count: string, rule: LimitRule, nowMs: number): Promise<unknown>;
}
