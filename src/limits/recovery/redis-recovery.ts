import type { LimitRule } from '../../plans/plan.js';
import type { Scope, Subject } from '../../plans/subject.js';
import type { RedisClient } from '../../redis/connect.js';
import type { BalanceSeen } from '../balance-lua.js';
import type { ConcurrencyPlaces } from '../concurrency-places.js';
import { inWindows, isBucketLimit, slotOf, type LimitKnown } from '../consume-script.js';
import type { BucketLimit } from '../core/token-bucket.lua.js';
import type { Span } from '../limiter-groups.js';
import type { SpentBalance } from '../rate-limiter.js';
import type { Bucket } from '../token-bucket.js';
import { BalanceLedger } from './balance-ledger.js';
import { BucketLedger } from './bucket-ledger.js';
import { KeyHomes } from './key-homes.js';
import { LossDetection } from './loss-detection.js';
import { PlacesLedger } from './places-ledger.js';
import type { LostKeys, Recovery } from './recovery.js';
import { RedisMarker } from './redis-marker.js';
import { WindowLedger } from './window-ledger.js';

/**
 * Recovery (recovery.ts) over Redis: a ledger per kind of count (windows, token buckets, concurrency
 * places, balances), each built with what it needs and handed to the checks that put them back
 * (loss-detection.ts) and to the moves of a key's counts (key-homes.ts).
 */
export class RedisRecovery implements Recovery {
  private readonly marker: RedisMarker;
  /** What this replica took of each current window. */
  private readonly windows: WindowLedger;
  /** What this replica learned of each token bucket in its last decision there. */
  private readonly buckets: BucketLedger;
  /** This replica's places in concurrency limits, as Redis must hold them. */
  private readonly places: PlacesLedger;
  /** What this replica saw spent of each balance: put back, and saved. */
  private readonly balances: BalanceLedger;
  private readonly losses: LossDetection;
  private readonly homes: KeyHomes;

  constructor(
    private readonly client: RedisClient,
    subscriber: RedisClient | undefined,
    prefix: string,
    private readonly clock: () => number,
    places: ConcurrencyPlaces,
  ) {
    this.marker = new RedisMarker(client, prefix);
    this.windows = new WindowLedger(client, this.marker);
    this.buckets = new BucketLedger(client, this.marker, places.replica);
    this.places = new PlacesLedger(client, places, this.marker);
    this.balances = new BalanceLedger(client);
    this.losses = new LossDetection(client, subscriber, prefix, clock, this.marker, [
      this.windows,
      this.balances,
      this.buckets,
      this.places,
    ]);
    this.homes = new KeyHomes(client, prefix, [this.windows, this.buckets, this.balances]);
    // A connection that becomes ready again may have reached a Redis that restarted empty.
    client.on('ready', this.check);
  }

  /**
   * The first read of Redis' marker is made by the first call (or the limiter's `ready`), not here:
   * on a Cluster a command issued while scripts are still being defined opens an auto-pipeline that
   * lacks them.
   */
  untilMarkerRead(): Promise<unknown> | undefined {
    return this.marker.current === undefined ? this.check() : undefined;
  }

  holdMs(): number {
    return this.losses.holdMs();
  }

  knownOf(span: Span, j: number, nowMs: number): LimitKnown {
    const count = span.counts[j]!;
    const limit = span.consumeLimits[j]!;
    if (inWindows(limit)) return this.windows.knownOf(count, slotOf(limit), nowMs, span.returning);
    return isBucketLimit(limit)
      ? this.buckets.recordOf(count, limit, nowMs, span.book.outstanding)
      : this.places.knownOf(count, nowMs);
  }

  balanceSeen(key: string): BalanceSeen | undefined {
    return this.balances.seenOf(key);
  }

  callOut(counts: readonly string[]): (answered: boolean) => void {
    return this.places.callOut(counts);
  }

  found(lost: LostKeys, nowMs: number): Promise<void> {
    return this.losses.found(lost, nowMs);
  }

  windowTaken(count: string, slot: number, places: number, expiresAt: number): void {
    this.windows.add(count, slot, places, expiresAt);
  }

  placesLeft(count: string, places: number, took: boolean, nowMs: number): void {
    this.places.saw(count, places, took, nowMs);
  }

  bucketLeft(count: string, terms: BucketLimit, rule: LimitRule, bucket: Bucket, held?: number): void {
    this.buckets.note(count, terms, rule, bucket, held);
  }

  balanceLeft(scope: Scope, id: string, key: string, b: BalanceSeen & { readonly granted: number }): void {
    this.balances.note(scope, id, key, b.epoch, b.window, b.granted, b.spent);
  }

  balancesSpent(): SpentBalance[] {
    return this.balances.spent();
  }

  readonly check = (): Promise<boolean> => this.losses.check(this.clock());

  bringHome(key: Subject, hashTag: string, nowMs: number): Promise<void> | undefined {
    return this.homes.bringHome(key, hashTag, nowMs);
  }

  async close(): Promise<void> {
    this.client.off('ready', this.check);
    await this.losses.close();
  }
}
