import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, corkedWrites, type RedisClient } from '../redis/connect.js';
import type { Metrics } from '../ops/metrics.js';
import { consumeKeys, countOf, defineConsumeScript, oldestSlotOf, shiftsOf, type ConsumeLimit, type ConsumeReply, type ConsumeScript } from './consume-script.js';
import { LeaseBook, type LeaseCall } from './lease-book.js';
import { counterKey, reclaimChannel, slidingKey } from './limiter-keys.js';
import type { LimitRule, Plan } from './plan.js';
import { isTighter, type LimitDecision, type LimitState, type RateLimiter } from './rate-limiter.js';
import { slidingCount, slotAt, slotLeavesAt, slotMs } from './sliding-window.js';
import { WindowLedger } from './window-ledger.js';
import { windowAt } from './window.js';

/**
 * Counters outlive their window by this much. The window start is in the key name, so a late key
 * is never reused; the grace only keeps a replica whose clock lags (NTP keeps it to milliseconds)
 * from finding the counter already gone and starting it again at zero.
 */
const EXPIRY_GRACE_MS = 5_000;
/** Requests waiting for a reclaim ask again after 1, 2, 4, … ms, then every 64 ms. */
const FIRST_RETRY_MS = 1;
const LAST_RETRY_MS = 64;
/** Idle counters are settled and forgotten this often. */
const SWEEP_MS = 1_000;

interface Waiter {
  resolve(decision: LimitDecision): void;
  reject(err: unknown): void;
}

/**
 * One window of one key's plan on this replica, the span in which the window (fixed) or slot
 * (sliding) of every limit of the plan stays the same: its lease book, and the requests waiting for
 * Redis.
 */
interface Counter {
  readonly keyId: string;
  readonly tag: string;
  /** Where this span starts and ends, epoch ms. */
  readonly startMs: number;
  readonly endMs: number;
  readonly limits: readonly LimitRule[];
  /** Each limit's count key in Redis. */
  readonly counts: readonly string[];
  /** The script's KEYS and, per limit, its limit, expiry and slot. */
  readonly keys: readonly string[];
  readonly consumeLimits: readonly ConsumeLimit[];
  /** Each limit's LimitState.resetMs: a fixed window's end; for a sliding limit, set from each answer. */
  readonly resets: number[];
  readonly book: LeaseBook;
  waiting: Waiter[];
  /** Requests that did not fit while places were being reclaimed; they ask again after `retryMs`. */
  held: Waiter[];
  retryMs: number;
  scheduled: boolean;
  callsInFlight: number;
}

export interface RedisRateLimiterOptions {
  /**
   * The subscriber connection. With it, a key busy on this replica gets its places in leases (one call
   * for many requests) and gives them back when another replica needs them; without it there are no
   * leases: one call per key and turn of the event loop, as exact, at more calls per request.
   */
  readonly subscriber?: RedisClient;
  /**
   * Epoch ms, for what happens between requests (answers, retries, the sweep); requests bring their
   * own `nowMs`. Leases and windows both follow it. Every replica and the script compare it: keep it
   * the wall clock outside tests.
   */
  readonly clock?: () => number;
}

/**
 * Counters in Redis, shared by every replica, for plans of one to four limits, fixed or sliding: the
 * I/O around the consume script (consume-script.ts) and each counter's lease book (lease-book.ts).
 *
 * The decisions a replica needs for one key within one turn of the event loop go to Redis as one
 * script call that asks for all of them, the first ones admitted in arrival order up to what every
 * limit of the plan holds. Calls for different keys in the same turn share one write (a corked socket on a
 * single Redis, per-node auto-pipelines on a Cluster).
 *
 * A key this replica keeps busy also gets a lease: places of the window's count taken ahead of its
 * requests, which later requests use without a call (each still gets its own place and
 * `remaining`). A replica that needs places still leased elsewhere asks for them back over pub/sub
 * and waits (a round trip while the holder lives, at most a second when it died, once per window).
 * See docs/decisions/0006-quota-leases.md.
 *
 * Windows and leases come from the caller's clock: replicas are assumed NTP-synchronised, and one
 * whose clock is off by d ms moves its window boundaries by d ms.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly consumeScript: ConsumeScript;
  /** Every counter with something left to do, by keyId|tag|start. */
  private readonly counters = new Map<string, Counter>();
  /** The latest counter of each key: a request in its span finds it without building a name. */
  private readonly current = new Map<string, Counter>();
  /** Count key → the counters counting in it, which a reclaim of that key asks. */
  private readonly byCount = new Map<string, Set<Counter>>();
  /** Counters with a call to send at the end of this turn. */
  private due: Counter[] = [];
  private readonly reclaimChannel: string;
  private readonly subscriber: RedisClient | undefined;
  private readonly subscribed: Promise<unknown> | undefined;
  private readonly clock: () => number;
  /** Subscribed to the reclaim channel: other replicas can ask for leased places back. */
  private listening = false;
  private readonly sweeper: NodeJS.Timeout;
  /** What this replica took of each current window: put back if Redis restarts empty. */
  private readonly ledger: WindowLedger;
  /**
   * The first read of Redis' restart marker, made with the first call rather than in the constructor:
   * on a Cluster a command issued while scripts are still being defined opens an auto-pipeline that
   * lacks them.
   */
  private epochRead: Promise<number> | undefined;
  private readonly sendDue = (): void => {
    const due = this.due;
    this.due = [];
    // send() never rejects: a failed call rejects its waiters instead.
    corkedWrites(this.client, () => {
      for (const counter of due) {
        counter.scheduled = false;
        void this.send(counter);
      }
    });
  };

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly metrics: Metrics,
    { subscriber, clock = Date.now }: RedisRateLimiterOptions = {},
  ) {
    this.consumeScript = defineConsumeScript(client);
    this.reclaimChannel = reclaimChannel(prefix);
    this.clock = clock;
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
    this.ledger = new WindowLedger(client, prefix);
    // A connection that becomes ready again may have reached a Redis that restarted empty.
    client.on('ready', this.checkLedger);
    this.sweeper = setInterval(() => this.sweep(this.clock()), SWEEP_MS).unref();
  }

  private readonly checkLedger = (): Promise<number> => this.ledger.check(this.clock());

  /** Resolves once other replicas can ask this one for leased places back, and Redis' marker is known. */
  async ready(): Promise<void> {
    await Promise.all([this.subscribed, (this.epochRead ??= this.checkLedger())]);
  }

  consume(keyId: string, plan: Plan, nowMs: number): LimitDecision | Promise<LimitDecision> {
    let counter = this.current.get(keyId);
    if (counter === undefined || counter.tag !== plan.tag || nowMs >= counter.endMs || nowMs < counter.startMs) {
      counter = this.counterAt(keyId, plan, nowMs);
    }
    const book = counter.book;
    const position = book.take(nowMs);
    if (position === 0) return this.ask(counter);
    if (book.wantsNext) this.schedule(counter);
    return place(counter, position, book.shifts);
  }

  /** The counter of `keyId` under `plan` at `nowMs`, made when first needed. */
  private counterAt(keyId: string, plan: Plan, nowMs: number): Counter {
    let startMs = -Infinity;
    let endMs = Infinity;
    const counts: string[] = [];
    const consumeLimits: ConsumeLimit[] = [];
    const resets: number[] = [];
    for (const rule of plan.limits) {
      let start: number;
      let end: number;
      if (rule.algorithm === 'fixed') {
        ({ start, end } = windowAt(rule.period, nowMs));
        counts.push(counterKey(this.prefix, keyId, rule.period, start));
        consumeLimits.push({ limit: rule.limit, expiresAt: end + EXPIRY_GRACE_MS, slot: -1 });
        resets.push(end);
      } else {
        const slot = slotAt(rule.period, nowMs);
        start = slot * slotMs(rule.period);
        end = start + slotMs(rule.period);
        counts.push(slidingKey(this.prefix, keyId, rule.period));
        consumeLimits.push({ limit: rule.limit, expiresAt: slotLeavesAt(rule.period, slot) + EXPIRY_GRACE_MS, slot });
        resets.push(slotLeavesAt(rule.period, slot));
      }
      startMs = Math.max(startMs, start);
      endMs = Math.min(endMs, end);
    }
    const name = `${keyId}|${plan.tag}|${startMs}`;
    let counter = this.counters.get(name);
    if (counter === undefined) {
      counter = {
        keyId,
        tag: plan.tag,
        startMs,
        endMs,
        limits: plan.limits,
        counts,
        keys: consumeKeys(counts),
        consumeLimits,
        resets,
        book: new LeaseBook(),
        waiting: [],
        held: [],
        retryMs: FIRST_RETRY_MS,
        scheduled: false,
        callsInFlight: 0,
      };
      this.counters.set(name, counter);
      for (const count of counts) {
        let counters = this.byCount.get(count);
        if (counters === undefined) this.byCount.set(count, (counters = new Set()));
        counters.add(counter);
      }
    }
    this.current.set(keyId, counter);
    return counter;
  }

  private forget(name: string, counter: Counter): void {
    this.counters.delete(name);
    if (this.current.get(counter.keyId) === counter) this.current.delete(counter.keyId);
    for (const count of counter.counts) {
      const counters = this.byCount.get(count);
      counters?.delete(counter);
      if (counters?.size === 0) this.byCount.delete(count);
    }
  }

  private ask(counter: Counter): Promise<LimitDecision> {
    return new Promise((resolve, reject) => {
      counter.waiting.push({ resolve, reject });
      this.schedule(counter);
    });
  }

  async peek(keyId: string, plan: Plan, nowMs: number): Promise<LimitState[]> {
    return this.measure('peek', () =>
      Promise.all(
        plan.limits.map(async (rule): Promise<LimitState> => {
          if (rule.algorithm === 'fixed') {
            const window = windowAt(rule.period, nowMs);
            const used = Number((await this.client.get(counterKey(this.prefix, keyId, rule.period, window.start))) ?? 0);
            return { rule, remaining: Math.max(0, rule.limit - used), resetMs: window.end };
          }
          const { used, oldest } = slidingCount(await this.client.hgetall(slidingKey(this.prefix, keyId, rule.period)), slotAt(rule.period, nowMs));
          return { rule, remaining: Math.max(0, rule.limit - used), resetMs: slotLeavesAt(rule.period, oldest) };
        }),
      ),
    );
  }

  /** The connections belong to the composition root, which closes them after every user is done. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.client.off('ready', this.checkLedger);
    if (this.subscriber !== undefined) {
      this.subscriber.off('message', this.onReclaim);
      // A subscriber that is reconnecting would queue the command until it is back.
      if (this.subscriber.status === 'ready') await settledWithin(this.subscriber.unsubscribe(this.reclaimChannel), CLOSE_WAIT_MS);
    }
  }

  private schedule(counter: Counter): void {
    // Requests arriving while others wait for a reclaim, or for a lease, go with them.
    if (counter.scheduled || counter.book.leaseInFlight || counter.held.length > 0) return;
    counter.scheduled = true;
    // setImmediate runs once the loop has read every socket that was ready: all of this turn's requests.
    if (this.due.length === 0) setImmediate(this.sendDue);
    this.due.push(counter);
  }

  /**
   * One script call for the counter's waiting requests, with what this replica settles (leases it is
   * done with, their unused places) and, for a busy key, a new lease.
   */
  private async send(counter: Counter): Promise<void> {
    this.epochRead ??= this.checkLedger();
    const waiting = counter.waiting;
    counter.waiting = [];
    const book = counter.book;
    const call = book.startCall(this.clock(), this.listening && this.subscriber!.status === 'ready');
    if (waiting.length === 0 && call.lease === 0 && call.settled === 0 && call.returned === 0) return; // nothing to ask or tell
    counter.callsInFlight++;
    let reply: ConsumeReply;
    try {
      reply = await this.measure('consume', () =>
        this.consumeScript(counter.keys, {
          want: waiting.length,
          lease: call.lease,
          settled: call.settled,
          returned: call.returned,
          now: call.sentAt,
          reclaimChannel: this.reclaimChannel,
          limits: counter.consumeLimits,
        }),
      );
    } catch (err) {
      // The call may still have run (a timeout): settling or returning again could count places
      // twice, so they are dropped: unsettled places only make others wait up to RECLAIM_WAIT_MS
      // longer, and places not given back are counted as used.
      for (const w of waiting) w.reject(err);
      this.answered(counter, call);
      return;
    }
    const [admitted, leased, held] = reply;
    const limits = counter.limits;
    for (let i = 0; i < limits.length; i++) {
      const { slot, expiresAt } = counter.consumeLimits[i]!;
      if (slot >= 0) counter.resets[i] = slotLeavesAt(limits[i]!.period, oldestSlotOf(reply, i));
      this.ledger.add(counter.counts[i]!, slot, admitted + leased - call.returned, expiresAt);
    }
    const shifts = shiftsOf(reply);
    let position = countOf(reply, 0) - leased - admitted;
    for (let i = 0; i < admitted; i++) waiting[i]!.resolve(place(counter, ++position, shifts));
    book.answered(call, waiting.length, reply);
    if (held === 1) {
      // Places leased elsewhere are on their way back: these ask again shortly, in arrival order.
      for (let i = admitted; i < waiting.length; i++) counter.held.push(waiting[i]!);
      const retryMs = counter.retryMs;
      counter.retryMs = Math.min(2 * retryMs, LAST_RETRY_MS);
      setTimeout(() => this.retryHeld(counter), retryMs);
    } else {
      if (admitted < waiting.length) {
        const refused = refusal(counter, reply);
        for (let i = admitted; i < waiting.length; i++) waiting[i]!.resolve(refused);
      }
      counter.retryMs = FIRST_RETRY_MS;
    }
    this.answered(counter, call);
  }

  /** After a call: requests that waited for a lease take its places, the rest ask Redis. */
  private answered(counter: Counter, call: LeaseCall): void {
    counter.callsInFlight--;
    const book = counter.book;
    book.ended(call);
    const waiting = counter.waiting;
    const now = this.clock();
    let served = 0;
    while (served < waiting.length) {
      const position = book.next(now);
      if (position === 0) break;
      waiting[served++]!.resolve(place(counter, position, book.shifts));
    }
    if (served > 0) counter.waiting = waiting.slice(served);
    if (book.settleIfExhausted() || counter.waiting.length > 0) this.schedule(counter);
  }

  private retryHeld(counter: Counter): void {
    counter.waiting = counter.held.concat(counter.waiting);
    counter.held = [];
    this.schedule(counter);
  }

  /** Another replica needs places of this counter. */
  private readonly onReclaim = (channel: string, count: string): void => {
    if (channel !== this.reclaimChannel) return;
    for (const counter of this.byCount.get(count) ?? []) {
      counter.book.reclaim();
      if (counter.book.owes) this.schedule(counter);
    }
  };

  /**
   * Settles the leases of counters gone quiet, forgets counters with nothing left to do, and finishes
   * a check of Redis' restart marker that Redis stopped answering (else only the next reconnect would).
   */
  private sweep(nowMs: number): void {
    if (this.ledger.unfinishedCheck) void this.checkLedger();
    for (const [name, counter] of this.counters) {
      const busy = counter.scheduled || counter.callsInFlight > 0 || counter.waiting.length > 0 || counter.held.length > 0;
      if (busy) continue;
      // Once every limit's window is over its places no longer matter. Until then (a longer window
      // of the plan, or a sliding limit's slot, still counts them) unused places are given back first.
      if (counter.consumeLimits.every((l, i) => l.slot < 0 && counter.resets[i]! <= nowMs)) {
        this.forget(name, counter);
      } else if (counter.book.endIfQuiet(nowMs)) {
        if (counter.book.owes) this.schedule(counter);
        else this.forget(name, counter);
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

/** A request admitted at `position` of the first limit's count (the others' by `shifts`). */
function place(counter: Counter, position: number, shifts: readonly number[]): LimitDecision {
  const limits = counter.limits;
  const resets = counter.resets;
  let best = 0;
  let bestRemaining = limits[0]!.limit - position;
  let bestResetMs = resets[0]!;
  for (let i = 1; i < limits.length; i++) {
    const remaining = limits[i]!.limit - position - shifts[i]!;
    if (isTighter(remaining, resets[i]!, bestRemaining, bestResetMs)) {
      best = i;
      bestRemaining = remaining;
      bestResetMs = resets[i]!;
    }
  }
  return { allowed: true, rule: limits[best]!, remaining: bestRemaining, resetMs: bestResetMs };
}

/** Requests that did not fit: the limit that is full and whose window ends last refused them. */
function refusal(counter: Counter, reply: ConsumeReply): LimitDecision {
  let by = -1;
  for (let i = 0; i < counter.limits.length; i++) {
    if (countOf(reply, i) < counter.limits[i]!.limit) continue;
    if (by < 0 || counter.resets[i]! > counter.resets[by]!) by = i;
  }
  return { allowed: false, rule: counter.limits[by]!, remaining: 0, resetMs: counter.resets[by]! };
}
