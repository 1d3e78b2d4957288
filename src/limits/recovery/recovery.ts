import type { LimitRule } from '../../plans/plan.js';
import type { Scope, Subject } from '../../plans/subject.js';
import type { BalanceSeen } from '../balance-lua.js';
import type { LimitKnown } from '../consume-script.js';
import type { BucketLimit } from '../core/token-bucket.lua.js';
import type { Span } from '../limiter-groups.js';
import type { SpentBalance } from '../rate-limiter.js';
import type { Bucket } from '../token-bucket.js';

/**
 * How the Redis limiter (redis-limiter.ts) gets back what Redis lost: a restart empty, a flush, keys
 * evicted or deleted while it stays up (docs/decisions/0059, 0125), and a key's counts that moved to
 * another consumer's names (0060). Its parts, one per job, are in this folder (README.md there); the
 * rest of the limiter sees only this.
 *
 * A decision tells it what it left; a consume call asks it, before, what this replica knows of each
 * count and balance (the script finds a loss by it) and whether decisions are held, and tells it after
 * what the call found lost.
 */
export interface Recovery {
  /**
   * Undefined once Redis' marker is known, else the check that reads it (it never rejects): no call
   * takes places before, and the limiter is ready after.
   */
  untilMarkerRead(): Promise<unknown> | undefined;
  /** How long decisions wait now, in ms (0: none): Redis lost keys and not every replica put back its own. */
  holdMs(): number;
  /** What this replica knows of the `j`-th count of `span` at `nowMs`: the consume script's `known`. */
  knownOf(span: Span, j: number, nowMs: number): LimitKnown;
  /** The most this replica saw spent of balance `key` (undefined: not seen): the script's `seen`. */
  balanceSeen(key: string): BalanceSeen | undefined;
  /**
   * A call that may take places in `counts` goes out: the function is told, once, whether it was
   * answered (its places are then held) or not (it may still run: they are put back as held).
   */
  callOut(counts: readonly string[]): (answered: boolean) => void;
  /** A call found keys lost: resolves once they are put back, or the marker changed. Never rejects. */
  found(lost: LostKeys, nowMs: number): Promise<void>;

  /** A decision took `places` (negative: gave them back) of the window counted at `count` (`slot`, or -1). */
  windowTaken(count: string, slot: number, places: number, expiresAt: number): void;
  /** A decision at `nowMs` left `places` in flight in concurrency count `count` (it took some: `took`). */
  placesLeft(count: string, places: number, took: boolean, nowMs: number): void;
  /**
   * A decision left token bucket `count` (decided with `terms`, of `rule`) as `bucket`, its units
   * leased out still in it; `held` of them leased to this replica and not settled (undefined: as before).
   */
  bucketLeft(count: string, terms: BucketLimit, rule: LimitRule, bucket: Bucket, held?: number): void;
  /** A decision left balance `key` of (`scope`, `id`): `spent` of `granted` units in (`epoch`, `window`). */
  balanceLeft(
    scope: Scope,
    id: string,
    key: string,
    balance: BalanceSeen & { readonly granted: number },
  ): void;
  /** What was seen spent of each balance charged since the last call (the database keeps it). */
  balancesSpent(): SpentBalance[];

  /** Reads Redis' marker and puts back what is owed; resolves whether everything was put back lately. */
  check(): Promise<boolean>;
  /**
   * Resolves once key `key`'s own counts of `nowMs` are under `hashTag`, moved there from where they
   * were; undefined when they are there already. Rejects when Redis does not answer.
   */
  bringHome(key: Subject, hashTag: string, nowMs: number): Promise<void> | undefined;
  close(): Promise<void>;
}

/** What a consume call found lost (and a replica tells the others): counts and balances by their keys. */
export interface LostKeys {
  readonly counts: readonly string[];
  readonly balances: readonly string[];
}
