import { capacityOf, type LimitRule } from '../../plans/plan.js';
import type { Scope } from '../../plans/subject.js';

/**
 * One way of counting a limit (fixed window, sliding window, token bucket, concurrency), as a pure
 * function of its state: state in, new state out, the clock passed in, no I/O. A state that is a
 * record is brought up to date and charged in place and returned (the decision path allocates nothing
 * per request: docs/performance.md); a caller that needs the state as it was keeps a copy. The
 * in-process limiter keeps the states; the consume script keeps the same states in Redis and decides
 * by the Lua twin of each module (`<module>.lua.ts`).
 */
export interface LimitAlgorithm<S> {
  /** `state` (undefined: nothing counted yet) brought up to `nowMs`: what left the window counts no more. */
  at(state: S | undefined, rule: LimitRule, nowMs: number): S;
  /** Units it counts, brought up to date (a token bucket: what it lacks of its burst). */
  used(state: S, rule: LimitRule): number;
  /** `state` with `units` more counted (a record: the same one, updated). */
  charged(state: S, rule: LimitRule, units: number): S;
  /**
   * `state` (brought up to now) with `delta` units more counted, a refund when negative, for a request
   * admitted at `admittedMs` whose cost became known after its response (docs/decisions/0191): what
   * that request was charged in (its window, its slot), when it still counts; never refused, never
   * below nothing counted.
   */
  settled(state: S, rule: LimitRule, delta: number, admittedMs: number): S;
  /** When it has room for `units` more, epoch ms (LimitState.resetMs). */
  resetMs(state: S, rule: LimitRule, nowMs: number, units: number): number;
  /** Nothing it counts is left at `nowMs`: it may be forgotten (`state` is left as it is). */
  spent(state: S, rule: LimitRule, nowMs: number): boolean;
}

/** One limit's answer to a request, as the combiner (combine.ts) reads it. */
export interface LimitVerdict {
  readonly scope: Scope;
  readonly rule: LimitRule;
  /** It has room for the request's units. */
  readonly fits: boolean;
  /** What it still holds before the request (negative when a plan change shrank it under its count). */
  readonly room: number;
  /** Refused: when it has room for the request's units, epoch ms. */
  readonly retryMs: number;
  /** Its units left and reset as it stands (reported when the request is refused). */
  readonly remaining: number;
  readonly resetMs: number;
}

/** A verdict a limiter fills again for each request (`into` below), so that deciding allocates none. */
export type VerdictRecord = { -readonly [F in keyof LimitVerdict]: LimitVerdict[F] };

/**
 * What `algorithm` says of `units` more in `state` (already brought up to `nowMs`), written into
 * `into` when given (a new record when not).
 */
export function verdictOf<S>(
  algorithm: LimitAlgorithm<S>,
  scope: Scope,
  rule: LimitRule,
  state: S,
  units: number,
  nowMs: number,
  into?: VerdictRecord,
): LimitVerdict {
  const room = capacityOf(rule) - algorithm.used(state, rule);
  const resetMs = algorithm.resetMs(state, rule, nowMs, 1);
  const retryMs = room >= units || units === 1 ? resetMs : algorithm.resetMs(state, rule, nowMs, units);
  return countedVerdict(scope, rule, room, units, resetMs, retryMs, into);
}

/**
 * The verdict of a limit known by its room before a request of `units`, its reset and when it has room
 * for those units (a count read back from Redis), written into `into` when given.
 */
export function countedVerdict(
  scope: Scope,
  rule: LimitRule,
  room: number,
  units: number,
  resetMs: number,
  retryMs: number,
  into: VerdictRecord = {} as VerdictRecord,
): LimitVerdict {
  into.scope = scope;
  into.rule = rule;
  into.fits = room >= units;
  into.room = room;
  into.retryMs = retryMs;
  into.remaining = Math.max(0, room);
  into.resetMs = resetMs;
  return into;
}
