import type { RedisClient } from '../redis/connect.js';
import { isCharged, type Subject } from '../plans/subject.js';
import { consumeKeys, inWindows, isBucketLimit } from './consume-script.js';
import { TWIN_OF } from './core/algorithms.js';
import type { ConsumeLimit, SpanTerms } from './core/redis-twin.js';
import type { ConcurrencyPlaces } from './concurrency-places.js';
import { isConcurrency } from '../plans/plan.js';
import { BUCKET_LEASES, LeaseBook, WINDOW_LEASES } from './lease-book.js';
import { PlanSwitches } from './plan-switches.js';
import { FIRST_RETRY_MS, type LimitBatches } from './limit-batches.js';
import type { LimitWatches } from './limit-watches.js';
import { isBusy, type Group, type Span } from './limiter-groups.js';
import { balanceKey, countsBase, hashTagOf, limitCountKey, reclaimChannel } from './limiter-keys.js';
import { checkSubjects } from './rate-limiter.js';
import type { Recovery } from './recovery/recovery.js';
import type { Visitor } from './visitor.js';

/** Idle spans are settled and forgotten this often. */
const SWEEP_MS = 1_000;

/** Where the count of a limit a span is being built for begins, ends and resets: written in place, read at once. */
const at: SpanTerms = { start: 0, end: 0, reset: 0 };

/**
 * The limits of the Redis limiter (redis-limiter.ts) on this replica: every span and group with
 * something left to do, found by a decision's subjects or a reclaimed count, and the sweep that
 * settles the leases of those gone quiet and forgets them. It hears the reclaim channel
 * (lease-reclaim.ts): the spans counting in a count another replica needs give back what they have
 * not used.
 */
export class LimitRegistry {
  /** Every span with something left to do, by name. */
  private readonly spans = new Map<string, Span>();
  /** Every group of those spans, by name. */
  private readonly groups = new Map<string, Group>();
  /**
   * The latest group of each list of subjects (the key cache keeps one list per key and selection of
   * its limits): a request in its span finds it without building a name.
   */
  private readonly current = new WeakMap<readonly Subject[], Group>();
  /** Count key → the spans counting in it, which a reclaim of that key asks. */
  private readonly byCount = new Map<string, Set<Span>>();
  /** The reclaim channel (lease-reclaim.ts), whose messages name the counts other replicas need. */
  private readonly reclaims: string;
  /** What each subject's counts were last decided by: a switch of plan carries what was spent. */
  private readonly switches: PlanSwitches;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    client: RedisClient,
    /** Where other replicas ask for leased units back: absent, none are leased. */
    private readonly subscriber: RedisClient | undefined,
    private readonly prefix: string,
    private readonly clock: () => number,
    private readonly batches: LimitBatches,
    private readonly recovery: Recovery,
    private readonly watches: LimitWatches,
    private readonly places: ConcurrencyPlaces,
  ) {
    this.reclaims = reclaimChannel(prefix);
    subscriber?.on('message', this.onReclaim);
    this.switches = new PlanSwitches(client, prefix, clock);
    this.sweeper = setInterval(() => this.sweep(clock()), SWEEP_MS).unref();
  }

  /** The group of the latest decision for `subjects` (and `visitor`), when it still spans `nowMs`. */
  boundGroup(subjects: readonly Subject[], nowMs: number, visitor: Visitor | undefined): Group | undefined {
    const group = this.current.get(subjects);
    if (group === undefined || group.forgotten || nowMs >= group.endMs || nowMs < group.startMs)
      return undefined;
    if (group.visitor !== '' && group.visitor !== visitor?.name) return undefined;
    return group;
  }

  /** The group of `subjects` (and `visitor`) at `nowMs`, made when first needed, and bound to them. */
  groupAt(subjects: readonly Subject[], nowMs: number, visitor: Visitor | undefined): Group {
    checkSubjects(subjects);
    const hashTag = hashTagOf(subjects);
    const spans: Span[] = [];
    for (const subject of subjects) {
      if (!isCharged(subject)) continue;
      const span = this.spanAt(subject, hashTag, nowMs, visitor);
      span.balance = subject.balance;
      spans.push(span);
    }
    const group = this.groupOf(spans, subjects.some((s) => s.plan.perVisitor) ? (visitor?.name ?? '|') : '');
    group.moving ??= this.counted(subjects, hashTag, group, nowMs);
    this.current.set(subjects, group);
    return group;
  }

  /**
   * Resolves once the counts of `subjects` are where and what their decision needs: the key's own moved
   * under `hashTag` when they are elsewhere (recovery/key-homes.ts), then each subject's carried into
   * its plan when it switched (plan-switches.ts); undefined when nothing is to do. Should Redis not
   * answer, the group is dropped: the next decision builds it again, and tries again.
   */
  private counted(
    subjects: readonly Subject[],
    hashTag: string,
    group: Group,
    nowMs: number,
  ): Promise<void> | undefined {
    const moved = this.moveHome(subjects, hashTag, nowMs);
    const ready =
      moved === undefined
        ? this.switchPlans(subjects, hashTag, nowMs)
        : moved.then(() => this.switchPlans(subjects, hashTag, nowMs));
    return ready?.then(
      () => {
        group.moving = undefined;
      },
      (err: unknown) => {
        this.groups.delete(group.name);
        group.forgotten = true;
        for (const span of group.spans) span.groups.delete(group);
        throw err;
      },
    );
  }

  /** Moves the own counts of the key of `subjects` to the names under `hashTag` when they are elsewhere. */
  private moveHome(subjects: readonly Subject[], hashTag: string, nowMs: number): Promise<void> | undefined {
    const key = subjects[0]!;
    if (key.scope !== 'key' || !isCharged(key)) return undefined;
    return this.recovery.bringHome(key, hashTag, nowMs);
  }

  /** Carries what each subject's old plan spent into its plan, when this replica has not seen it so. */
  private switchPlans(
    subjects: readonly Subject[],
    hashTag: string,
    nowMs: number,
  ): Promise<void> | undefined {
    const pending: Promise<void>[] = [];
    for (const subject of subjects) {
      const switching = isCharged(subject) ? this.switches.switched(subject, hashTag, nowMs) : undefined;
      if (switching !== undefined) pending.push(switching);
    }
    return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined);
  }

  /**
   * The span of `subject`'s limits and balance at `nowMs` (those per visitor, `visitor`'s), its counts
   * under `hashTag`, made when first needed.
   */
  private spanAt(subject: Subject, hashTag: string, nowMs: number, visitor: Visitor | undefined): Span {
    const base = countsBase(this.prefix, subject, hashTag);
    const balance = subject.balance === undefined ? undefined : balanceKey(base);
    let startMs = -Infinity;
    let endMs = Infinity;
    const counts: string[] = [];
    const consumeLimits: ConsumeLimit[] = [];
    const resets: number[] = [];
    for (const rule of subject.plan.limits) {
      // Its terms by its algorithm's twin (core/*.lua.ts): a count without a window (start -Infinity)
      // is the same for ever, its state set from each answer (limiter-groups.ts).
      consumeLimits.push(TWIN_OF[rule.algorithm].span(rule, nowMs, this.places, at));
      counts.push(limitCountKey(base, rule, at.start, visitor));
      resets.push(at.reset);
      startMs = Math.max(startMs, at.start);
      endMs = Math.min(endMs, at.end);
    }
    const name =
      `${base}|${subject.plan.tag}|${startMs}${balance === undefined ? '' : '|credits'}` +
      (subject.plan.perVisitor ? `|${visitor?.name ?? '|'}` : '');
    let span = this.spans.get(name);
    if (span === undefined) {
      span = {
        name,
        scope: subject.scope,
        id: subject.id,
        balanceKey: balance,
        balance: subject.balance,
        startMs,
        endMs,
        limits: subject.plan.limits,
        counts,
        consumeLimits,
        resets,
        placesAfter: counts.map(() => 0),
        book: new LeaseBook(consumeLimits.some(isBucketLimit) ? BUCKET_LEASES : WINDOW_LEASES),
        // A span's windows and slots stay the same: its watch is for them, from its start.
        watch: this.watches.quotaWatch(subject, startMs),
        groups: new Set(),
        callsInFlight: 0,
        returning: 0,
      };
      this.spans.set(name, span);
      for (const count of counts) {
        let spans = this.byCount.get(count);
        if (spans === undefined) this.byCount.set(count, (spans = new Set()));
        spans.add(span);
      }
    }
    return span;
  }

  /** The group of `spans` (of `visitor`, by name: '' none), made when first needed. */
  private groupOf(spans: readonly Span[], visitor: string): Group {
    // One span, a key without a consumer, is the common case: its group is built without a name of its own.
    const one = spans.length === 1 ? spans[0]! : undefined;
    const name = one?.name ?? spans.map((span) => span.name).join('&');
    let group = this.groups.get(name);
    if (group === undefined) {
      const balances = spans.flatMap((span) => (span.balanceKey === undefined ? [] : [span.balanceKey]));
      group = {
        name,
        spans,
        balances: balances.length,
        visitor,
        // A concurrency limit's places go to pools instead (concurrency-places.ts); a token bucket's
        // units are leased (docs/decisions/0208), but not a visitor's. A visitor's window leases as a
        // key's does (0090): only while busy, sized by its own demand.
        leases:
          balances.length === 0 &&
          !spans.some((span) =>
            span.consumeLimits.some((l) => !inWindows(l) && (visitor !== '' || !isBucketLimit(l))),
          ),
        placeCounts: spans.flatMap((span) => span.counts.filter((_, j) => isConcurrency(span.limits[j]!))),
        startMs: one?.startMs ?? Math.max(...spans.map((span) => span.startMs)),
        endMs: one?.endMs ?? Math.min(...spans.map((span) => span.endMs)),
        keys: consumeKeys(one?.counts ?? spans.flatMap((span) => span.counts), balances),
        limits: spans.map((span) => span.consumeLimits),
        forgotten: false,
        moving: undefined,
        waiting: [],
        held: [],
        retryMs: FIRST_RETRY_MS,
        scheduled: false,
        callsInFlight: 0,
        leaseCalls: 0,
      };
      this.groups.set(name, group);
      for (const span of spans) span.groups.add(group);
    }
    return group;
  }

  private forget(span: Span): void {
    this.spans.delete(span.name);
    for (const count of span.counts) {
      const spans = this.byCount.get(count);
      spans?.delete(span);
      if (spans?.size === 0) this.byCount.delete(count);
    }
    for (const group of span.groups) {
      this.groups.delete(group.name);
      group.forgotten = true;
      for (const other of group.spans) if (other !== span) other.groups.delete(group);
    }
  }

  /** Another replica needs units or places of a count: every span and pool in it gives back what it has not used. */
  private readonly onReclaim = (channel: string, count: string): void => {
    if (channel !== this.reclaims) return;
    const now = this.clock();
    this.places.reclaimed(count, now);
    for (const span of this.byCount.get(count) ?? []) {
      span.book.reclaim(now);
      if (span.book.owes) this.batches.schedule(this.groupOf([span], ''));
    }
  };

  /**
   * Settles the leases of spans gone quiet, forgets spans with nothing left to do (and their groups),
   * and finishes a check of Redis' restart marker that Redis stopped answering (else only the next
   * reconnect would).
   */
  private sweep(nowMs: number): void {
    void this.recovery.check();
    for (const span of this.spans.values()) {
      if (isBusy(span)) continue;
      // Once every limit's window is over its units no longer matter. Until then (a longer window,
      // or a sliding limit's slot, still counts them; a token bucket's always) unused units are given back first.
      const over = (l: ConsumeLimit, j: number): boolean => TWIN_OF[l.algorithm].over(span.resets[j]!, nowMs);
      if (span.consumeLimits.every(over)) {
        this.forget(span);
      } else if (span.book.endIfQuiet(nowMs)) {
        if (span.book.owes) this.batches.schedule(this.groupOf([span], ''));
        else this.forget(span);
      }
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.subscriber?.off('message', this.onReclaim);
  }
}
