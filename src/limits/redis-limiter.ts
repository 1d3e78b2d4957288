import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, corkedWrites, type RedisClient } from '../redis/connect.js';
import type { Metrics } from '../ops/metrics.js';
import { consumeKeys, defineConsumeScript, type ConsumeReply, type ConsumeScript } from './consume-script.js';
import { LeaseBook, type LeaseCall } from './lease-book.js';
import { counterKey, reclaimChannel } from './limiter-keys.js';
import type { LimitDecision, RateLimiter } from './rate-limiter.js';
import { WindowLedger } from './window-ledger.js';
import { windowAt, type RateLimitPolicy } from './window.js';

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

/** One window of one key on this replica: its lease book, and the requests waiting for Redis. */
interface Counter {
  readonly name: string;
  readonly keys: readonly [string, string];
  /** Window end, epoch ms. */
  readonly resetMs: number;
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
 * Fixed-window counters in Redis, shared by every replica: the I/O around the consume script
 * (consume-script.ts) and each counter's lease book (lease-book.ts).
 *
 * The decisions a replica needs for one key within one turn of the event loop go to Redis as one
 * script call that asks for all of them, the first ones admitted in arrival order up to what the
 * window holds. Calls for different keys in the same turn share one write (a corked socket on a
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
  private readonly counters = new Map<string, Counter>();
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

  consume(keyId: string, policy: RateLimitPolicy, nowMs: number): LimitDecision | Promise<LimitDecision> {
    const window = windowAt(policy.period, nowMs);
    const name = counterKey(this.prefix, keyId, policy.period, window.start);
    let counter = this.counters.get(name);
    if (counter === undefined) {
      counter = newCounter(name, window.end, policy.limit);
      this.counters.set(name, counter);
    } else {
      counter.book.setLimit(policy.limit);
    }
    const book = counter.book;
    const position = book.take(nowMs);
    if (position === 0) return this.ask(counter);
    if (book.wantsNext) this.schedule(counter);
    return place(counter, position);
  }

  private ask(counter: Counter): Promise<LimitDecision> {
    return new Promise((resolve, reject) => {
      counter.waiting.push({ resolve, reject });
      this.schedule(counter);
    });
  }

  async peek(keyId: string, policy: RateLimitPolicy, nowMs: number): Promise<LimitDecision> {
    const window = windowAt(policy.period, nowMs);
    const name = counterKey(this.prefix, keyId, policy.period, window.start);
    const used = Number((await this.measure('peek', () => this.client.get(name))) ?? 0);
    return { allowed: used < policy.limit, limit: policy.limit, remaining: Math.max(0, policy.limit - used), resetMs: window.end };
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
    const expiresAt = counter.resetMs + EXPIRY_GRACE_MS;
    let reply: ConsumeReply;
    try {
      reply = await this.measure('consume', () =>
        this.consumeScript(counter.keys, {
          limit: book.limit,
          expiresAt,
          want: waiting.length,
          lease: call.lease,
          settled: call.settled,
          returned: call.returned,
          now: call.sentAt,
          reclaimChannel: this.reclaimChannel,
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
    const [count, admitted, leased, held] = reply;
    this.ledger.add(counter.name, admitted + leased - call.returned, expiresAt);
    let position = count - leased - admitted;
    for (let i = 0; i < admitted; i++) waiting[i]!.resolve(place(counter, ++position));
    book.answered(call, waiting.length, reply);
    if (held === 1) {
      // Places leased elsewhere are on their way back: these ask again shortly, in arrival order.
      for (let i = admitted; i < waiting.length; i++) counter.held.push(waiting[i]!);
      const retryMs = counter.retryMs;
      counter.retryMs = Math.min(2 * retryMs, LAST_RETRY_MS);
      setTimeout(() => this.retryHeld(counter), retryMs);
    } else {
      const limit = book.limit;
      const refused: LimitDecision = { allowed: false, limit, remaining: Math.max(0, limit - count), resetMs: counter.resetMs };
      for (let i = admitted; i < waiting.length; i++) waiting[i]!.resolve(refused);
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
      waiting[served++]!.resolve(place(counter, position));
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
  private readonly onReclaim = (channel: string, name: string): void => {
    if (channel !== this.reclaimChannel) return;
    const counter = this.counters.get(name);
    if (counter === undefined) return;
    counter.book.reclaim();
    if (counter.book.owes) this.schedule(counter);
  };

  /** Settles the leases of counters gone quiet, and forgets counters with nothing left to do. */
  private sweep(nowMs: number): void {
    for (const [name, counter] of this.counters) {
      const busy = counter.scheduled || counter.callsInFlight > 0 || counter.waiting.length > 0 || counter.held.length > 0;
      if (busy) continue;
      if (counter.resetMs <= nowMs) {
        this.counters.delete(name); // The window is over: its places no longer matter.
      } else if (counter.book.endIfQuiet(nowMs)) {
        if (counter.book.owes) this.schedule(counter);
        else this.counters.delete(name);
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

function newCounter(name: string, resetMs: number, limit: number): Counter {
  return { name, keys: consumeKeys(name), resetMs, book: new LeaseBook(limit), waiting: [], held: [], retryMs: FIRST_RETRY_MS, scheduled: false, callsInFlight: 0 };
}

function place(counter: Counter, position: number): LimitDecision {
  return { allowed: true, limit: counter.book.limit, remaining: counter.book.limit - position, resetMs: counter.resetMs };
}
