import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, corkedWrites, type RedisClient } from '../redis/connect.js';
import type { Metrics } from '../ops/metrics.js';
import {
  admittedOf,
  balanceOf,
  consumeKeys,
  countOf,
  defineConsumeScript,
  heldOf,
  leasedOf,
  lostOf,
  NO_SHIFTS,
  oldestSlotOf,
  shiftsOf,
  type ConsumeLimit,
  type ConsumeReply,
  type ConsumeScript,
  type ReplyLayout,
} from './consume-script.js';
import { defineSyncBalanceScript, type BalanceTerms, type SyncBalanceScript } from './balance-lua.js';
import { BalanceLedger } from './balance-ledger.js';
import { CreditWatch } from './credit-watch.js';
import { LeaseBook, type LeaseCall } from './lease-book.js';
import type { LimitNotices } from './limit-notices.js';
import { KeyHomes, movedCounts } from './key-homes.js';
import {
  balanceKey,
  countsBase,
  EXPIRY_GRACE_MS,
  hashTagOf,
  limitCountKey,
  reclaimChannel,
} from './limiter-keys.js';
import { remainingOf, settle, windowOf, type Balance } from '../plans/balance.js';
import {
  balanceStateOf,
  checkCost,
  checkSubjects,
  MAX_SUBJECTS,
  type BalanceState,
  type Decision,
  type LimitState,
  type RateLimiter,
  type SpentBalance,
} from './rate-limiter.js';
import { isCharged, type Subject } from '../plans/subject.js';
import { QuotaWatch } from './quota-watch.js';
import { slidingCount, slidingResetAt, slotAt, slotLeavesAt, slotMs } from './sliding-window.js';
import { WindowLedger } from './window-ledger.js';
import { LossDetection } from './loss-detection.js';
import {
  countsAfter,
  isBusy,
  place,
  refusal,
  runsOf,
  type Group,
  type Span,
  type Waiter,
} from './limiter-groups.js';
import { windowAt } from '../plans/window.js';

/** Requests waiting for a reclaim ask again after 1, 2, 4, … ms, then every 64 ms. */
const FIRST_RETRY_MS = 1;
const LAST_RETRY_MS = 64;
/** Idle spans are settled and forgotten this often. */
const SWEEP_MS = 1_000;

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
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly consumeScript: ConsumeScript;
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
  /** Groups with a call to send at the end of this turn. */
  private due: Group[] = [];
  /**
   * Scratch, filled and read at once, per span of the decision under way: its place (in the span's
   * first limit's count), its shifts, and where a call's admitted units start.
   */
  private readonly places: number[] = Array.from({ length: MAX_SUBJECTS }, () => 0);
  private readonly shifts: (readonly number[])[] = Array.from({ length: MAX_SUBJECTS }, () => NO_SHIFTS);
  private readonly bases: number[] = Array.from({ length: MAX_SUBJECTS }, () => 0);
  private readonly reclaimChannel: string;
  private readonly subscriber: RedisClient | undefined;
  private readonly subscribed: Promise<unknown> | undefined;
  private readonly clock: () => number;
  private readonly notices: LimitNotices | undefined;
  private readonly creditWatch: CreditWatch | undefined;
  /** Subscribed to the reclaim channel: other replicas can ask for leased units back. */
  private listening = false;
  private readonly sweeper: NodeJS.Timeout;
  /** What this replica took of each current window: put back if Redis restarts empty. */
  private readonly ledger: WindowLedger;
  /** What this replica saw spent of each balance: put back if Redis restarts empty, and saved. */
  private readonly balanceLedger: BalanceLedger;
  private readonly syncBalance: SyncBalanceScript;
  /** Where each key's own counts are: they follow a key that moves between consumers. */
  private readonly homes: KeyHomes;
  /**
   * The first read of Redis' restart marker, made with the first call rather than in the constructor:
   * on a Cluster a command issued while scripts are still being defined opens an auto-pipeline that
   * lacks them.
   */
  private epochRead: Promise<boolean> | undefined;
  /** Notices Redis losing keys while it stays up, and holds decisions until they are put back. */
  private readonly losses: LossDetection;
  private readonly sendDue = (): void => {
    const due = this.due;
    this.due = [];
    // send() never rejects: a failed call rejects its waiters instead.
    corkedWrites(this.client, () => {
      for (const group of due) {
        group.scheduled = false;
        void this.send(group);
      }
    });
  };

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly metrics: Metrics,
    { subscriber, clock = Date.now, notices }: RedisRateLimiterOptions = {},
  ) {
    this.consumeScript = defineConsumeScript(client);
    this.reclaimChannel = reclaimChannel(prefix);
    this.clock = clock;
    this.notices = notices;
    this.creditWatch = notices && new CreditWatch(notices);
    this.subscriber = subscriber;
    if (subscriber !== undefined) {
      subscriber.on('message', this.onReclaim);
      // Until subscribed (and while the subscriber reconnects) no leases are asked for: nobody could
      // ask this replica to give them back.
      this.subscribed = subscriber.subscribe(this.reclaimChannel).then(
        () => (this.listening = true),
        () => {},
      );
    }
    this.homes = new KeyHomes(client, prefix, (moved) => {
      for (const { from, to, expiresAt } of moved)
        if (expiresAt === 0) this.balanceLedger.forget(from);
        else this.ledger.move(from, to);
    });
    this.balanceLedger = new BalanceLedger(client);
    this.syncBalance = defineSyncBalanceScript(client);
    this.ledger = new WindowLedger(client, prefix, this.balanceLedger);
    this.losses = new LossDetection(client, subscriber, prefix, this.ledger, this.balanceLedger, this.clock);
    // A connection that becomes ready again may have reached a Redis that restarted empty.
    client.on('ready', this.checkLedger);
    this.sweeper = setInterval(() => this.sweep(this.clock()), SWEEP_MS).unref();
  }

  private readonly checkLedger = (): Promise<boolean> => this.losses.check(this.clock());

  /** Resolves once other replicas can ask this one for leased units back, and Redis' marker is known. */
  async ready(): Promise<void> {
    await Promise.all([this.subscribed, (this.epochRead ??= this.checkLedger())]);
  }

  consume(
    subjects: readonly Subject[],
    cost: number,
    nowMs: number,
    states?: LimitState[],
  ): Decision | Promise<Decision> {
    checkCost(cost);
    const group = this.boundGroup(subjects, nowMs) ?? this.groupAt(subjects, nowMs);
    if (group.moving !== undefined)
      return group.moving.then(() => this.consume(subjects, cost, nowMs, states));
    if (group.balances > 0) return this.ask(group, cost, states);
    const spans = group.spans;
    // Every book sees the request (its demand sizes the next lease); it is decided here only when all hold its cost.
    let fits = true;
    for (let s = 0; s < spans.length; s++) if (!spans[s]!.book.offer(cost, nowMs)) fits = false;
    if (!fits) return this.ask(group, cost, states);
    return this.takeLeased(group, cost, states, nowMs);
  }

  /** The group of the latest decision for `subjects`, when it still spans `nowMs`. */
  private boundGroup(subjects: readonly Subject[], nowMs: number): Group | undefined {
    const group = this.current.get(subjects);
    if (group === undefined || group.forgotten || nowMs >= group.endMs || nowMs < group.startMs)
      return undefined;
    return group;
  }

  /** The group of `subjects` at `nowMs`, made when first needed, and bound to them. */
  private groupAt(subjects: readonly Subject[], nowMs: number): Group {
    checkSubjects(subjects);
    const hashTag = hashTagOf(subjects);
    const spans: Span[] = [];
    for (const subject of subjects) {
      if (!isCharged(subject)) continue;
      const span = this.spanAt(subject, hashTag, nowMs);
      span.balance = subject.balance;
      spans.push(span);
    }
    const group = this.groupOf(spans);
    group.moving ??= this.moveHome(subjects, hashTag, group, nowMs);
    this.current.set(subjects, group);
    return group;
  }

  /**
   * Moves the own counts of the key of `subjects` to the names under `hashTag` when they are elsewhere
   * (key-homes.ts); undefined when they are there. Should Redis not answer, the group is dropped: the
   * next decision builds it again, and tries again.
   */
  private moveHome(
    subjects: readonly Subject[],
    hashTag: string,
    group: Group,
    nowMs: number,
  ): Promise<void> | undefined {
    const key = subjects[0]!;
    if (key.scope !== 'key' || !isCharged(key) || this.homes.isHome(key.id, hashTag)) return undefined;
    return this.homes
      .moveTo(key.id, hashTag, (from) => movedCounts(this.prefix, key, from, hashTag, nowMs))
      .then(
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

  /** The span of `subject`'s limits and balance at `nowMs`, its counts under `hashTag`, made when first needed. */
  private spanAt(subject: Subject, hashTag: string, nowMs: number): Span {
    const base = countsBase(this.prefix, subject, hashTag);
    const balance = subject.balance === undefined ? undefined : balanceKey(base);
    let startMs = -Infinity;
    let endMs = Infinity;
    const counts: string[] = [];
    const consumeLimits: ConsumeLimit[] = [];
    const resets: number[] = [];
    for (const rule of subject.plan.limits) {
      let start: number;
      let end: number;
      if (rule.algorithm === 'fixed') {
        ({ start, end } = windowAt(rule.period, nowMs));
        counts.push(limitCountKey(base, rule, start));
        consumeLimits.push({ limit: rule.limit, expiresAt: end + EXPIRY_GRACE_MS, slot: -1 });
        resets.push(end);
      } else {
        const slot = slotAt(rule.period, nowMs);
        start = slot * slotMs(rule.period);
        end = start + slotMs(rule.period);
        counts.push(limitCountKey(base, rule, start));
        consumeLimits.push({
          limit: rule.limit,
          expiresAt: slotLeavesAt(rule.period, slot) + EXPIRY_GRACE_MS,
          slot,
        });
        resets.push(slidingResetAt(rule.period, slot));
      }
      startMs = Math.max(startMs, start);
      endMs = Math.min(endMs, end);
    }
    const name = `${base}|${subject.plan.tag}|${startMs}${balance === undefined ? '' : '|credits'}`;
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
        book: new LeaseBook(),
        // A span's windows and slots stay the same: its watch is for them, from its start.
        watch: QuotaWatch.of(subject.scope, subject.id, subject.plan.limits, startMs, this.notices),
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

  /** The group of `spans`, made when first needed. */
  private groupOf(spans: readonly Span[]): Group {
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

  /** A request every book of `group` holds the cost of, at `nowMs`: its units, taken from each lease. */
  private takeLeased(group: Group, cost: number, states: LimitState[] | undefined, nowMs: number): Decision {
    const spans = group.spans;
    let wantsNext = false;
    for (let s = 0; s < spans.length; s++) {
      const book = spans[s]!.book;
      this.places[s] = book.take(cost);
      this.shifts[s] = book.shifts;
      if (book.wantsNext) wantsNext = true;
    }
    // One call asks for a book's next lease: the other groups sharing the book (a consumer's keys) send none for it.
    if (wantsNext && this.schedule(group))
      for (const span of spans) if (span.book.wantsNext) span.book.nextDue();
    return place(group, this.places, this.shifts, states, undefined, nowMs);
  }

  private ask(group: Group, cost: number, states: LimitState[] | undefined): Promise<Decision> {
    return new Promise((resolve, reject) => {
      group.waiting.push({ cost, states, resolve, reject });
      this.schedule(group);
    });
  }

  async peek(subjects: readonly Subject[], nowMs: number): Promise<LimitState[]> {
    checkSubjects(subjects);
    const hashTag = hashTagOf(subjects);
    return this.measure('peek', () =>
      Promise.all(
        subjects.flatMap(({ scope, id, plan }) => {
          const base = countsBase(this.prefix, { scope, id }, hashTag);
          return plan.limits.map(async (rule): Promise<LimitState> => {
            if (rule.algorithm === 'fixed') {
              const window = windowAt(rule.period, nowMs);
              const used = Number((await this.client.get(limitCountKey(base, rule, window.start))) ?? 0);
              return { scope, rule, remaining: Math.max(0, rule.limit - used), resetMs: window.end };
            }
            const { used, oldest } = slidingCount(
              await this.client.hgetall(limitCountKey(base, rule, 0)),
              slotAt(rule.period, nowMs),
            );
            return {
              scope,
              rule,
              remaining: Math.max(0, rule.limit - used),
              resetMs: slidingResetAt(rule.period, oldest),
            };
          });
        }),
      ),
    );
  }

  async peekBalances(subjects: readonly Subject[], nowMs: number): Promise<BalanceState[]> {
    const hashTag = hashTagOf(subjects);
    return this.measure('peek', () =>
      Promise.all(
        subjects
          .filter((subject) => subject.balance !== undefined)
          .map(async (subject) => {
            const key = balanceKey(countsBase(this.prefix, subject, hashTag));
            const [e, w, g, sp, b] = await this.client.hmget(key, 'e', 'w', 'g', 's', 'b');
            const held =
              e == null ? undefined : { epoch: +e, window: +w!, granted: +g!, spent: +sp!, base: +b! };
            const remaining = remainingOf(settle(held, subject.balance!, nowMs));
            return balanceStateOf(subject.scope, subject.balance!, remaining, nowMs);
          }),
      ),
    );
  }

  async syncBalances(subjects: readonly Subject[], nowMs: number): Promise<void> {
    const hashTag = hashTagOf(subjects);
    await this.measure('sync', () =>
      Promise.all(
        subjects
          .filter((subject) => subject.balance !== undefined)
          .map((subject) =>
            this.syncBalance(
              balanceKey(countsBase(this.prefix, subject, hashTag)),
              balanceTerms(subject.balance!, nowMs),
            ),
          ),
      ),
    );
  }

  spentBalances(): SpentBalance[] {
    return this.balanceLedger.spent();
  }

  /** The connections belong to the composition root, which closes them after every user is done. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.client.off('ready', this.checkLedger);
    await this.losses.close();
    if (this.subscriber !== undefined) {
      this.subscriber.off('message', this.onReclaim);
      // A subscriber that is reconnecting would queue the command until it is back.
      if (this.subscriber.status === 'ready')
        await settledWithin(this.subscriber.unsubscribe(this.reclaimChannel), CLOSE_WAIT_MS);
    }
  }

  /** Whether a call of `group` is due at the end of this turn (made so when it can be). */
  private schedule(group: Group): boolean {
    if (group.scheduled) return true;
    // Requests arriving while others wait for a reclaim, or for a lease, go with them.
    if (group.leaseCalls > 0 || group.held.length > 0) return false;
    group.scheduled = true;
    // setImmediate runs once the loop has read every socket that was ready: all of this turn's requests.
    if (this.due.length === 0) setImmediate(this.sendDue);
    this.due.push(group);
    return true;
  }

  /**
   * One script call for the group's waiting requests, with what this replica settles for each of its
   * spans (leases it is done with, their unused units) and, for busy ones, new leases.
   */
  private async send(group: Group): Promise<void> {
    this.epochRead ??= this.checkLedger();
    const now = this.clock();
    // Redis lost keys: until every replica has put back its own, its requests wait.
    const hold = this.losses.holdMs();
    if (hold > 0) {
      this.holdFor(group, hold);
      return;
    }
    const waiting = group.waiting;
    group.waiting = [];
    const canLease = group.balances === 0 && this.listening && this.subscriber!.status === 'ready';
    const spans = group.spans;
    const calls: LeaseCall[] = [];
    let leasing = false;
    let settling = false;
    for (const span of spans) {
      const call = span.book.startCall(now, canLease);
      calls.push(call);
      if (call.lease > 0) leasing = true;
      if (call.settled > 0) settling = true;
    }
    if (waiting.length === 0 && !leasing && !settling) return; // nothing to ask or tell
    const known = spans.flatMap((span) =>
      span.counts.map((count, j) =>
        Math.max(0, this.ledger.placesIn(count, span.consumeLimits[j]!.slot, now) - span.returning),
      ),
    );
    const balances = spans.map(
      (span) =>
        span.balance && {
          terms: balanceTerms(span.balance, now),
          seen: this.balanceLedger.seenOf(span.balanceKey!),
        },
    );
    group.callsInFlight++;
    if (leasing) group.leaseCalls++;
    for (let s = 0; s < spans.length; s++) {
      spans[s]!.callsInFlight++;
      spans[s]!.returning += calls[s]!.returned;
    }
    const runs = runsOf(waiting);
    let reply: ConsumeReply;
    try {
      reply = await this.measure('consume', () =>
        this.consumeScript(group.keys, {
          now,
          reclaimChannel: this.reclaimChannel,
          leases: calls,
          limits: group.limits,
          known,
          balances,
          runs,
        }),
      );
    } catch (err) {
      // The call may still have run (a timeout): settling or returning again could count units
      // twice, so they are dropped: unsettled units only make others wait up to RECLAIM_WAIT_MS
      // longer, and units not given back are counted as used.
      for (const w of waiting) w.reject(err);
      this.answered(group, calls, leasing);
      return;
    }
    const lost = lostOf(reply, known.length);
    if (lost !== undefined) {
      // Nothing was decided or settled: the requests ask again once what was lost is put back.
      group.held.push(...waiting);
      for (let s = 0; s < spans.length; s++) spans[s]!.book.notRun(calls[s]!);
      this.answered(group, calls, leasing);
      const found = {
        counts: lost.limits.map((i) => group.keys[2 * i]!),
        balances: lost.balances.map((k) => group.keys[2 * known.length + k]!),
      };
      void this.losses.found(found, now).then(() => this.holdFor(group, this.losses.holdMs()));
      return;
    }
    this.decide(group, calls, waiting, runs, reply, now);
    this.answered(group, calls, leasing);
  }

  /** The group's requests wait `ms`, then ask again. */
  private holdFor(group: Group, ms: number): void {
    group.held.push(...group.waiting);
    group.waiting = [];
    setTimeout(() => this.retryHeld(group), ms);
  }

  /** Resolves, holds or refuses the requests of a call from Redis' reply, and tells each span's book. */
  private decide(
    group: Group,
    calls: readonly LeaseCall[],
    waiting: readonly Waiter[],
    runs: readonly number[],
    reply: ConsumeReply,
    now: number,
  ): void {
    const spans = group.spans;
    const layout: ReplyLayout = {
      limits: (group.keys.length - group.balances) / 2,
      subjects: spans.length,
      balances: group.balances,
    };
    let admittedUnits = 0;
    let largestRefused = 0;
    for (let r = 0; r < runs.length; r += 2) {
      const admitted = admittedOf(reply, layout, r / 2);
      admittedUnits += admitted * runs[r + 1]!;
      if (admitted < runs[r]!) largestRefused = Math.max(largestRefused, runs[r + 1]!);
    }
    // Per span: the place before its first admitted unit, and what its book learns; per balance, what
    // it held before the call's first admitted unit.
    const before = this.bases;
    const balances: CalledBalance[] = [];
    for (let s = 0, i = 0; s < spans.length; s++) {
      const span = spans[s]!;
      if (span.balanceKey !== undefined) {
        const b = balanceOf(reply, layout, balances.length);
        this.balanceLedger.note(span.scope, span.id, span.balanceKey, b.epoch, b.window, b.granted, b.spent);
        balances.push({
          span,
          epoch: b.epoch,
          window: b.window,
          granted: b.granted,
          spentBefore: b.spent - admittedUnits,
          refused: false,
        });
      }
      if (span.limits.length === 0) continue;
      const first = i;
      const leased = leasedOf(reply, layout, s);
      let room = Infinity;
      for (let j = 0; j < span.limits.length; j++, i++) {
        const { slot, expiresAt } = span.consumeLimits[j]!;
        if (slot >= 0) span.resets[j] = slidingResetAt(span.limits[j]!.period, oldestSlotOf(reply, i));
        this.ledger.add(span.counts[j]!, slot, admittedUnits + leased - calls[s]!.returned, expiresAt);
        room = Math.min(room, span.limits[j]!.limit - countOf(reply, i));
      }
      const count = countOf(reply, first);
      const shifts = shiftsOf(reply, first, span.limits.length);
      this.shifts[s] = shifts;
      before[s] = count - leased - admittedUnits;
      span.book.answered(calls[s]!, { leased, count, shifts, short: room < largestRefused });
    }
    // The first requests of each run are in, with the units after those of the requests before them.
    const refused: Waiter[] = [];
    let units = 0;
    for (let r = 0, w = 0; r < runs.length; r += 2) {
      const admitted = admittedOf(reply, layout, r / 2);
      for (let k = 0; k < runs[r]!; k++) {
        const waiter = waiting[w++]!;
        if (k >= admitted) {
          refused.push(waiter);
          continue;
        }
        units += runs[r + 1]!;
        for (let s = 0; s < spans.length; s++) this.places[s] = before[s]! + units;
        let lowest: BalanceState | undefined;
        for (const { span, granted, spentBefore } of balances) {
          const remaining = granted - spentBefore - units;
          if (lowest === undefined || remaining < lowest.remaining)
            lowest = balanceStateOf(span.scope, span.balance!, remaining, now);
        }
        waiter.resolve(place(group, this.places, this.shifts, waiter.states, lowest, now));
      }
    }
    if (heldOf(reply)) {
      // Units leased elsewhere are on their way back: these ask again shortly, in arrival order.
      group.held.push(...refused);
      const retryMs = group.retryMs;
      group.retryMs = Math.min(2 * retryMs, LAST_RETRY_MS);
      setTimeout(() => this.retryHeld(group), retryMs);
    } else {
      let decision: Decision | undefined;
      let decidedCost = 0;
      for (const waiter of refused) {
        if (waiter.cost !== decidedCost) {
          decidedCost = waiter.cost;
          // A balance that does not hold the cost refuses it (the key's first), else a limit does.
          const short = balances.find(
            ({ granted, spentBefore }) => granted - spentBefore - units < decidedCost,
          );
          if (short !== undefined) short.refused = true;
          decision = short
            ? {
                allowed: false,
                limit: undefined,
                balance: balanceStateOf(
                  short.span.scope,
                  short.span.balance!,
                  Math.max(0, short.granted - short.spentBefore - units),
                  now,
                ),
              }
            : { allowed: false, limit: refusal(group, reply, decidedCost), balance: undefined };
        }
        if (waiter.states !== undefined) countsAfter(group, reply, waiter.states);
        waiter.resolve(decision!);
      }
      group.retryMs = FIRST_RETRY_MS;
    }
    if (this.creditWatch !== undefined)
      for (const b of balances)
        this.creditWatch.saw(
          b.span.scope,
          b.span.id,
          b.span.balance!,
          b,
          b.granted - b.spentBefore - units,
          b.refused,
          now,
        );
  }

  /** After a call: requests that waited for a lease take its units, the rest ask Redis. */
  private answered(group: Group, calls: readonly LeaseCall[], leasing: boolean): void {
    const spans = group.spans;
    group.callsInFlight--;
    if (leasing) group.leaseCalls--;
    for (let s = 0; s < spans.length; s++) {
      spans[s]!.callsInFlight--;
      spans[s]!.returning -= calls[s]!.returned;
      spans[s]!.book.ended(calls[s]!);
    }
    const waiting = group.waiting;
    const now = this.clock();
    let served = 0;
    while (group.balances === 0 && served < waiting.length) {
      const { cost, states } = waiting[served]!;
      if (!spans.every((span) => span.book.fits(cost, now))) break;
      waiting[served++]!.resolve(this.takeLeased(group, cost, states, now));
    }
    if (served > 0) group.waiting = waiting.slice(served);
    let settle = false;
    for (const span of spans) if (span.book.settleIfExhausted()) settle = true;
    if (settle || group.waiting.length > 0) this.schedule(group);
  }

  private retryHeld(group: Group): void {
    group.waiting = group.held.concat(group.waiting);
    group.held = [];
    this.schedule(group);
  }

  /** Another replica needs units of this count: every span counting in it gives back what it has not used. */
  private readonly onReclaim = (channel: string, count: string): void => {
    if (channel !== this.reclaimChannel) return;
    for (const span of this.byCount.get(count) ?? []) {
      span.book.reclaim();
      if (span.book.owes) this.schedule(this.groupOf([span]));
    }
  };

  /**
   * Settles the leases of spans gone quiet, forgets spans with nothing left to do (and their groups),
   * and finishes a check of Redis' restart marker that Redis stopped answering (else only the next
   * reconnect would).
   */
  private sweep(nowMs: number): void {
    void this.checkLedger();
    for (const span of this.spans.values()) {
      if (isBusy(span)) continue;
      // Once every limit's window is over its units no longer matter. Until then (a longer window,
      // or a sliding limit's slot, still counts them) unused units are given back first.
      if (span.consumeLimits.every((l, j) => l.slot < 0 && span.resets[j]! <= nowMs)) {
        this.forget(span);
      } else if (span.book.endIfQuiet(nowMs)) {
        if (span.book.owes) this.schedule(this.groupOf([span]));
        else this.forget(span);
      }
    }
  }

  private async measure<T>(operation: string, run: () => Promise<T>): Promise<T> {
    const end = this.metrics.redisDuration.startTimer({ operation });
    try {
      return await run();
    } catch (err) {
      this.metrics.redisErrors.inc({ operation });
      throw err;
    } finally {
      end();
    }
  }
}

/** A balance of a call, as Redis answered it. */
interface CalledBalance {
  readonly span: Span;
  readonly epoch: number;
  readonly window: number;
  readonly granted: number;
  /** Units spent before the call's first admitted unit. */
  readonly spentBefore: number;
  /** It refused a request of the call for want of credits. */
  refused: boolean;
}

/** What a call passes of a balance's record at `now`. */
function balanceTerms(balance: Balance, now: number): BalanceTerms {
  return {
    epoch: balance.epoch,
    window: balance.window,
    granted: balance.granted,
    floor: balance.floor,
    windowNow: windowOf(balance, now),
    refillAmount: balance.refill?.amount ?? -1,
  };
}
