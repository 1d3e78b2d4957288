import { corkedWrites, type RedisClient } from '../redis/connect.js';
import type { Metrics } from '../ops/metrics.js';
import type { Subject } from '../plans/subject.js';
import type { Visitor } from './visitor.js';
import { windowAt } from '../plans/window.js';
import { refunded } from './lease-book.js';
import { LeaseReclaim } from './lease-reclaim.js';
import { ConcurrencyPlaces, DEFAULT_CONCURRENCY_LEASE_MS } from './concurrency-places.js';
import type { LimitNotices } from './limit-notices.js';
import { LimitBatches } from './limit-batches.js';
import { LimitRegistry } from './limit-registry.js';
import { LimitWatches } from './limit-watches.js';
import { countsBase, hashTagOf, limitCountKey } from './limiter-keys.js';
import {
  checkCost,
  checkSubjects,
  type BalanceState,
  type Decision,
  type LimitState,
  type RateLimiter,
  type Reservation,
  type SpentBalance,
} from './rate-limiter.js';
import { RedisRecovery } from './recovery/redis-recovery.js';
import { RedisBalances } from './redis-balances.js';
import { storedState } from './redis-states.js';
import { settlementOf, type Settlement } from './redis-settlement.js';
import { SettleBatches } from './settle-batches.js';
import { defineSettleScript, type SettleCall, type SettleScript } from './settle-script.js';
import { canPool, pooledPlace } from './limiter-groups.js';
import { TWIN_OF } from './core/algorithms.js';
import { UNREAD } from './core/redis-twin.js';
import type { BucketLimit } from './core/token-bucket.lua.js';

export interface RedisRateLimiterOptions {
  /**
   * The subscriber connection. With it, a subject busy on this replica gets its units in leases (one
   * call for many requests) and gives them back when another replica needs them; without it there are
   * no leases: one call per decision's subjects and turn of the event loop, as exact, at more calls.
   */
  readonly subscriber?: RedisClient;
  /**
   * Epoch ms, for what happens between requests (answers, retries, the sweep); requests bring their
   * own `nowMs`. Leases and windows both follow it. Every replica and the script compare it: keep it
   * the wall clock outside tests.
   */
  readonly clock?: () => number;
  /** Where quota thresholds and low or exhausted balances are told (absent: nowhere, at no cost). */
  readonly notices?: LimitNotices;
  /** How long a place of a concurrency limit outlives this replica's last heartbeat (CONCURRENCY_LEASE_SECONDS). */
  readonly concurrencyLeaseMs?: number;
}

/**
 * Counters in Redis, shared by every replica, for the limits of a key and of its consumer (one to
 * four each, fixed or sliding): the I/O around the consume script (consume-script.ts) and each
 * subject's lease books (lease-book.ts).
 *
 * The decisions a replica needs for one set of subjects within one turn of the event loop go to Redis
 * as one script call that decides all of them, in arrival order, each admitted when every limit of
 * every subject has room for its cost, and charges all of them atomically. Calls for different
 * subjects in the same turn share one write (a corked socket on a single Redis, per-node
 * auto-pipelines on a Cluster).
 *
 * A subject this replica keeps busy also gets leases: units of its counts taken ahead of its
 * requests. A request whose every subject's lease holds its cost takes them without a call (each
 * still gets its own place and `remaining`); otherwise it goes to Redis, which charges every subject
 * at once. A replica that needs units still leased elsewhere asks for them back over pub/sub and waits
 * (a round trip while the holder lives, at most a second when it died, once per window). See
 * docs/decisions/0006-quota-leases.md and 0025-one-decision-for-key-and-consumer.md.
 *
 * Windows and leases come from the caller's clock: replicas are assumed NTP-synchronised, and one
 * whose clock is off by d ms moves its window boundaries by d ms.
 *
 * Each job has a module of its own: the spans and groups of this replica and their sweep
 * (limit-registry.ts), the calls per turn (limit-batches.ts), the reclaim channel
 * (lease-reclaim.ts), what puts back what Redis lost and moves a key's counts (recovery/, behind
 * recovery/recovery.ts), balances outside a decision (redis-balances.ts), notices and metrics
 * (limit-watches.ts). Each is built after what it uses, and given it.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly watches: LimitWatches;
  private readonly reclaim: LeaseReclaim;
  private readonly recovery: RedisRecovery;
  private readonly batches: LimitBatches;
  private readonly registry: LimitRegistry;
  private readonly balances: RedisBalances;
  private readonly places: ConcurrencyPlaces;
  private readonly settleScript: SettleScript;
  private readonly settlements: SettleBatches;
  private readonly inFlight = (count: string): number => this.places.inFlight(count);

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    metrics: Metrics,
    {
      subscriber,
      clock = Date.now,
      notices,
      concurrencyLeaseMs = DEFAULT_CONCURRENCY_LEASE_MS,
    }: RedisRateLimiterOptions = {},
  ) {
    this.watches = new LimitWatches(metrics, notices);
    this.places = new ConcurrencyPlaces(client, clock, concurrencyLeaseMs, this.watches);
    this.recovery = new RedisRecovery(client, subscriber, prefix, clock, this.places);
    this.reclaim = new LeaseReclaim(subscriber, prefix);
    this.batches = new LimitBatches(client, clock, this.reclaim, this.recovery, this.watches, this.places);
    this.registry = new LimitRegistry(
      client,
      subscriber,
      prefix,
      clock,
      this.batches,
      this.recovery,
      this.watches,
      this.places,
    );
    this.balances = new RedisBalances(client, prefix, this.recovery, this.watches);
    this.settleScript = defineSettleScript(client);
    this.settlements = new SettleBatches(
      (settlement, keys, call) => this.sendSettlement(settlement, keys, call),
      (send) => corkedWrites(client, send),
    );
  }

  /** Resolves once other replicas can ask this one for leased units back, and Redis' marker is known. */
  async ready(): Promise<void> {
    await Promise.all([this.reclaim.subscribed, this.recovery.untilMarkerRead()]);
  }

  consume(
    subjects: readonly Subject[],
    cost: number,
    nowMs: number,
    visitor?: Visitor,
  ): Decision | Promise<Decision> {
    checkCost(cost);
    const group =
      this.registry.boundGroup(subjects, nowMs, visitor) ?? this.registry.groupAt(subjects, nowMs, visitor);
    if (group.moving !== undefined)
      return group.moving.then(() => this.consume(subjects, cost, nowMs, visitor));
    if (group.placeCounts.length > 0) {
      // A request that finds an idle place in every pool of its counts is admitted without a call.
      const release = canPool(group) ? this.places.fromPool(group.placeCounts, nowMs) : undefined;
      if (release !== undefined) return { ...pooledPlace(group, this.inFlight, nowMs), release };
      return this.batches.ask(group, cost).then((decision) => {
        if (decision.allowed) return { ...decision, release: this.places.taken(group.placeCounts) };
        // Refused by a call sent while another of this replica's was leasing places to its pool: one
        // of those, idle now, is the request's (the next call would give them back and take them again).
        const pooled = canPool(group) ? this.places.fromPool(group.placeCounts, nowMs) : undefined;
        return pooled === undefined
          ? decision
          : { ...pooledPlace(group, this.inFlight, nowMs), release: pooled };
      });
    }
    if (!group.leases) return this.batches.ask(group, cost);
    const spans = group.spans;
    // Every book sees the request (its demand sizes the next lease); it is decided here only when all hold its cost.
    let fits = true;
    for (let s = 0; s < spans.length; s++) if (!spans[s]!.book.offer(cost, nowMs)) fits = false;
    if (!fits) return this.batches.ask(group, cost);
    return this.batches.takeLeased(group, cost, nowMs);
  }

  /**
   * Settled with the other settlements of its turn that charge the same counts (settle-batches.ts):
   * one script call (settle-script.ts) for them all.
   */
  settle(reservation: Reservation, units: number, nowMs: number): void | Promise<void> {
    const delta = units - reservation.reserved;
    if (delta === 0) return;
    // A lease of the windows it was counted in still runs here: it takes the refund, and gives it back
    // to Redis with its other unused units (the ledger learns it then). docs/decisions/0225.
    if (delta < 0) {
      const group = this.registry.boundGroup(
        reservation.subjects,
        reservation.admittedMs,
        reservation.visitor,
      );
      if (group !== undefined && refunded(group.spans, -delta)) return;
    }
    const settlement = settlementOf(this.prefix, reservation, delta, nowMs);
    if (settlement.keys.length === 0) return;
    // This replica's part of each window (recovery's ledger) never says more than Redis counts, or a
    // decision sent meanwhile takes the difference for keys Redis lost: lowered before a refund is
    // sent, raised once a charge is taken.
    if (delta < 0) {
      this.windowsTaken(settlement, delta);
      return this.settlements.add(settlement);
    }
    return this.settlements.add(settlement).then(() => this.windowsTaken(settlement, delta));
  }

  private windowsTaken({ windows }: Settlement, delta: number): void {
    for (const { count, slot, expiresAt } of windows)
      this.recovery.windowTaken(count, slot, delta, expiresAt);
  }

  /**
   * One call of the settle script; this replica's ledger learns how it left each token bucket, so
   * that a refund is not taken for Redis losing keys.
   */
  private async sendSettlement({ buckets }: Settlement, keys: string[], call: SettleCall): Promise<void> {
    const left = await this.watches.measure('settle', () => this.settleScript(keys, call));
    buckets.forEach(({ count, rule }, i) => {
      const [units, parts, at] = left.slice(3 * i, 3 * i + 3).map(Number) as [number, number, number];
      const terms = TWIN_OF[rule.algorithm].span(rule, call.now, this.places, UNREAD) as BucketLimit;
      this.recovery.bucketLeft(count, terms, rule, { units, parts, at });
    });
  }

  async peek(subjects: readonly Subject[], nowMs: number): Promise<LimitState[]> {
    checkSubjects(subjects);
    const hashTag = hashTagOf(subjects);
    return this.watches.measure('peek', () =>
      Promise.all(
        subjects.flatMap(({ scope, id, plan }) => {
          const base = countsBase(this.prefix, { scope, id }, hashTag);
          return plan.limits.map((rule) => {
            const start = windowAt(rule.period, nowMs).start;
            return storedState(this.client, limitCountKey(base, rule, start), scope, rule, nowMs);
          });
        }),
      ),
    );
  }

  peekBalances(subjects: readonly Subject[], nowMs: number): Promise<BalanceState[]> {
    return this.balances.peek(subjects, nowMs);
  }

  syncBalances(subjects: readonly Subject[], nowMs: number): Promise<void> {
    return this.balances.sync(subjects, nowMs);
  }

  spentBalances(): SpentBalance[] {
    return this.balances.spent();
  }

  /** The connections belong to the composition root, which closes them after every user is done. */
  async close(): Promise<void> {
    await this.settlements.close();
    this.registry.close();
    await this.places.close();
    await this.recovery.close();
    await this.reclaim.close();
  }
}
