import { settledWithin } from '../ops/deadline.js';
import { CLOSE_WAIT_MS, corkedWrites, DIRECT_SCRIPTS, type RedisClient } from '../redis/connect.js';
import { defineScript, type ScriptRunner } from '../redis/script.js';
import type { Metrics } from '../ops/metrics.js';
import type { LimitDecision, RateLimiter } from './rate-limiter.js';
import { WindowLedger } from './window-ledger.js';
import { windowAt, type RateLimitPolicy } from './window.js';

/** A lease's places are used within this long or given back. */
const LEASE_MS = 100;
/** A lease holds about this long's worth of a key's requests on this replica. */
const LEASE_HORIZON_MS = 20;
const MAX_LEASE = 1_000;
/**
 * How long requests that do not fit wait, from the first reclaim in a window, for leased places to
 * come back: live holders give them back within a round trip or two, even on a loaded machine; this
 * bounds the wait, once per window, when a holder died.
 */
const RECLAIM_WAIT_MS = 1_000;

/**
 * Check and count in one atomic step, for `want` requests of one key at once plus up to `lease`
 * places handed to the calling replica ahead of its requests. Requests are admitted while the window
 * holds them and only those are counted; a lease is granted only when every request asked for was
 * admitted and the window holds 1,024 more, and at most a sixteenth of those, so small limits and the
 * last places of a window are decided one call at a time.
 *
 * KEYS[1]: the window's count (places taken: admitted requests and leased places), a string, as
 * before leases existed. Beside it, `KEYS[1]:lease` (the same hash tag, so the same Cluster slot) is
 * the lease book: `p` places leased and not yet settled by their replica, `r` when places were first
 * asked back (ms, 0 while none are outstanding). A key seen now and then, far from its limit, never
 * touches it.
 * ARGV: limit, key expiry (ms), want, lease asked, places settled (leases this replica is done with),
 * of those returned unused, now (ms). Few arguments: a key in rotation pays for every one, per request.
 *
 * When requests do not fit while leased places are outstanding, the call says `held` and publishes
 * the counter on `<prefix>quota-reclaim`: holders give back what they have not used, settle what they
 * used, and the caller asks again, until nothing is outstanding or RECLAIM_WAIT_MS have passed since
 * the first reclaim. So with limit L, L requests are admitted per window even when a replica sits on
 * leased places, whether its lease is still running or ended.
 * Returns {count after this call, admitted, leased, held}.
 */
const CONSUME_LUA = `
local limit = tonumber(ARGV[1])
local want = tonumber(ARGV[3])
local settled = tonumber(ARGV[5])
local returned = tonumber(ARGV[6])
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if returned > 0 and count > 0 then count = redis.call('DECRBY', KEYS[1], math.min(returned, count)) end
local admitted = math.max(0, math.min(want, limit - count))
local leased = 0
if admitted == want and limit - count - want >= 1024 then leased = math.min(tonumber(ARGV[4]), math.floor((limit - count - want) / 16)) end
local taken = admitted + leased
if taken > 0 then
  count = redis.call('INCRBY', KEYS[1], taken)
  if count == taken then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
end
local held = 0
if leased ~= settled or admitted < want then
  local bookKey = KEYS[1] .. ':lease'
  local book = redis.call('HMGET', bookKey, 'p', 'r')
  local outstanding = math.max(0, tonumber(book[1] or '0') + leased - settled)
  local asked = tonumber(book[2] or '0')
  if outstanding == 0 then asked = 0 end
  if admitted < want and outstanding > 0 then
    local now = tonumber(ARGV[7])
    if asked == 0 then asked = now end
    if now < asked + ${RECLAIM_WAIT_MS} then
      held = 1
      redis.call('PUBLISH', string.match(KEYS[1], '^(.*){') .. 'quota-reclaim', KEYS[1])
    end
  end
  if book[1] or leased > 0 then
    redis.call('HSET', bookKey, 'p', outstanding, 'r', asked)
    if not book[1] then redis.call('PEXPIREAT', bookKey, ARGV[2]) end
  end
end
return {count, admitted, leased, held}
`;

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

/** Places `next`…`last` of a window's count, this replica's to hand out until `endsAt` (wall clock). */
interface Lease {
  next: number;
  readonly last: number;
  readonly endsAt: number;
  readonly size: number;
}

/** One window of one key on this replica: its leases, and the requests waiting for Redis. */
interface Counter {
  readonly name: string;
  /** Window end, epoch ms. */
  readonly resetMs: number;
  limit: number;
  lease: Lease | undefined;
  /** The next lease, asked for while `lease` still had places so that requests never wait for it. */
  spare: Lease | undefined;
  /** Places of leases this replica is done with that Redis still counts as outstanding. */
  settleable: number;
  /** Unused places of leases that ended, to give back with the next call. */
  toReturn: number;
  /** No more leases in this window: it ran low or out, or another replica asked for places back. */
  exhausted: boolean;
  /** Requests seen since the last answer, and when the call that got it was sent: what a lease is sized by. */
  demand: number;
  answeredAt: number;
  /** When the latest request came (wall clock). */
  seenAt: number;
  waiting: Waiter[];
  /** Requests that did not fit while places were being reclaimed; they ask again after `retryMs`. */
  held: Waiter[];
  retryMs: number;
  scheduled: boolean;
  /** A call that asked for a lease is out: requests wait for it instead of sending their own. */
  leaseInFlight: boolean;
  callsInFlight: number;
}

export interface RedisRateLimiterOptions {
  /**
   * The subscriber connection. With it, a key busy on this replica gets its places in leases (one call
   * for many requests) and gives them back when another replica needs them; without it there are no
   * leases: one call per key and turn of the event loop, as exact, at more calls per request.
   */
  readonly subscriber?: RedisClient;
}

/**
 * Fixed-window counters in Redis, shared by every replica.
 *
 * The decisions a replica needs for one key within one turn of the event loop go to Redis as one
 * script call that asks for all of them, the first ones admitted in arrival order up to what the
 * window holds. Calls for different keys in the same turn share one write (a corked socket on a
 * single Redis, per-node auto-pipelines on a Cluster).
 *
 * A key this replica keeps busy also gets a lease: places of the window's count taken ahead of its
 * requests, about 20 ms of them, which later requests use without a call (each still gets its own
 * place and `remaining`). Leases stop for the rest of a window once it runs low or out; a replica
 * that needs places still leased elsewhere asks for them back over pub/sub and waits (a round trip
 * while the holder lives, at most a second when it died, once per window). Places leased by a
 * replica that died stay counted as used. See docs/decisions/0006-quota-leases.md.
 *
 * Windows come from the caller's clock (`nowMs`): replicas are assumed NTP-synchronised, and one
 * whose clock is off by d ms moves its window boundaries by d ms.
 *
 * Keys: `<prefix>{<keyId>}:<period>:<windowStartMs>` and the same with `:lease`; the hash tag puts
 * all of a key's counters in one Cluster slot.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly consumeScript: ScriptRunner;
  private readonly counters = new Map<string, Counter>();
  /** Counters with a call to send at the end of this turn. */
  private due: Counter[] = [];
  private readonly reclaimChannel: string;
  private readonly subscriber: RedisClient | undefined;
  private readonly subscribed: Promise<unknown> | undefined;
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
    { subscriber }: RedisRateLimiterOptions = {},
  ) {
    this.consumeScript = defineScript(client, DIRECT_SCRIPTS.consume, CONSUME_LUA, 1);
    // The script publishes on the same name, taken from the counter's key up to its hash tag.
    this.reclaimChannel = prefix + 'quota-reclaim';
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
    this.sweeper = setInterval(() => this.sweep(Date.now()), SWEEP_MS).unref();
  }

  private readonly checkLedger = (): Promise<number> => this.ledger.check(Date.now());

  /** Resolves once other replicas can ask this one for leased places back, and Redis' marker is known. */
  async ready(): Promise<void> {
    await Promise.all([this.subscribed, (this.epochRead ??= this.checkLedger())]);
  }

  consume(keyId: string, policy: RateLimitPolicy, nowMs: number): LimitDecision | Promise<LimitDecision> {
    const window = windowAt(policy.period, nowMs);
    const name = this.key(keyId, policy, window.start);
    let counter = this.counters.get(name);
    if (counter === undefined) {
      counter = newCounter(name, window.end, policy.limit);
      this.counters.set(name, counter);
    } else if (counter.limit !== policy.limit) {
      // The plan changed within the window: places leased under the old limit go back.
      this.endLeases(counter);
      counter.limit = policy.limit;
    }
    counter.demand++;
    // Leases are timed by the wall clock, which every replica and the script compare.
    const seenAt = (counter.seenAt = Date.now());
    for (let lease = counter.lease; lease !== undefined; lease = this.endLease(counter)) {
      if (lease.next > lease.last || seenAt >= lease.endsAt) continue;
      const position = lease.next++;
      // Half used: the next lease is asked for now, so it is there before this one runs out.
      if (counter.spare === undefined && !counter.exhausted && lease.last - lease.next < lease.size / 2) this.schedule(counter);
      return this.place(counter, position);
    }
    return this.ask(counter);
  }

  private ask(counter: Counter): Promise<LimitDecision> {
    return new Promise((resolve, reject) => {
      counter.waiting.push({ resolve, reject });
      this.schedule(counter);
    });
  }

  async peek(keyId: string, policy: RateLimitPolicy, nowMs: number): Promise<LimitDecision> {
    const window = windowAt(policy.period, nowMs);
    const used = Number((await this.measure('peek', () => this.client.get(this.key(keyId, policy, window.start)))) ?? 0);
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

  private place(counter: Counter, position: number): LimitDecision {
    return { allowed: true, limit: counter.limit, remaining: counter.limit - position, resetMs: counter.resetMs };
  }

  private schedule(counter: Counter): void {
    // Requests arriving while others wait for a reclaim, or for a lease, go with them.
    if (counter.scheduled || counter.leaseInFlight || counter.held.length > 0) return;
    counter.scheduled = true;
    // setImmediate runs once the loop has read every socket that was ready: all of this turn's requests.
    if (this.due.length === 0) setImmediate(this.sendDue);
    this.due.push(counter);
  }

  /** The current lease is done: its unused places go back with the next call; the spare takes over. */
  private endLease(counter: Counter): Lease | undefined {
    const lease = counter.lease;
    if (lease !== undefined) {
      if (lease.next <= lease.last) counter.toReturn += lease.last - lease.next + 1;
      counter.settleable += lease.size;
    }
    counter.lease = counter.spare;
    counter.spare = undefined;
    return counter.lease;
  }

  /** Both leases end (a reclaim, a plan change, a key gone quiet). */
  private endLeases(counter: Counter): void {
    while (this.endLease(counter) !== undefined);
  }

  /**
   * One script call for the counter's waiting requests, with what this replica settles (leases it is
   * done with, their unused places) and, for a busy key, a new lease.
   */
  private async send(counter: Counter): Promise<void> {
    this.epochRead ??= this.checkLedger();
    const waiting = counter.waiting;
    counter.waiting = [];
    const { settleable: settled, toReturn: returned } = counter;
    const now = Date.now();
    counter.settleable = 0;
    counter.toReturn = 0;
    const lease = this.leaseSize(counter, now);
    if (waiting.length === 0 && lease === 0 && settled === 0 && returned === 0) return; // nothing to ask or tell
    if (lease > 0) counter.leaseInFlight = true;
    counter.callsInFlight++;
    let reply: [number, number, number, number];
    try {
      reply = (await this.measure('consume', () =>
        this.consumeScript(
          [counter.name],
          [counter.limit, counter.resetMs + EXPIRY_GRACE_MS, waiting.length, lease, settled, returned, now],
        ),
      )) as [number, number, number, number];
    } catch (err) {
      // The call may still have run (a timeout): settling or returning again could count places
      // twice, so they are dropped: unsettled places only make others wait up to RECLAIM_WAIT_MS
      // longer, and places not given back are counted as used.
      for (const w of waiting) w.reject(err);
      this.answered(counter, lease > 0);
      return;
    }
    const [count, admitted, leased, held] = reply;
    this.ledger.add(counter.name, admitted + leased - returned, counter.resetMs + EXPIRY_GRACE_MS);
    const limit = counter.limit;
    let position = count - leased - admitted;
    for (let i = 0; i < admitted; i++) waiting[i]!.resolve(this.place(counter, ++position));
    if (leased > 0) {
      const lease: Lease = { next: count - leased + 1, last: count, endsAt: now + LEASE_MS, size: leased };
      const current = counter.lease;
      if (current === undefined || current.next > current.last || now >= current.endsAt) this.endLease(counter);
      if (counter.lease === undefined) counter.lease = lease;
      else counter.spare = lease;
    } else if (admitted < waiting.length || lease > 0) {
      // Refused, or too little left to lease: the rest of the window is decided call by call.
      counter.exhausted = true;
    }
    if (held === 1) {
      // Places leased elsewhere are on their way back: these ask again shortly, in arrival order.
      for (let i = admitted; i < waiting.length; i++) counter.held.push(waiting[i]!);
      const retryMs = counter.retryMs;
      counter.retryMs = Math.min(2 * retryMs, LAST_RETRY_MS);
      setTimeout(() => this.retryHeld(counter), retryMs);
    } else {
      const refused: LimitDecision = { allowed: false, limit, remaining: Math.max(0, limit - count), resetMs: counter.resetMs };
      for (let i = admitted; i < waiting.length; i++) waiting[i]!.resolve(refused);
      counter.retryMs = FIRST_RETRY_MS;
    }
    counter.demand = 0;
    counter.answeredAt = now;
    this.answered(counter, lease > 0);
  }

  /** After a call: requests that waited for a lease take its places, the rest ask Redis. */
  private answered(counter: Counter, askedLease: boolean): void {
    counter.callsInFlight--;
    if (askedLease) counter.leaseInFlight = false;
    const waiting = counter.waiting;
    let served = 0;
    const now = Date.now();
    let lease = counter.lease;
    while (lease !== undefined && served < waiting.length) {
      if (lease.next <= lease.last && now < lease.endsAt) waiting[served++]!.resolve(this.place(counter, lease.next++));
      else lease = this.endLease(counter);
    }
    if (served > 0) counter.waiting = waiting.slice(served);
    // A reclaim that arrived while this lease was on its way sends its unused places straight back.
    if (counter.exhausted) this.endLeases(counter);
    if (counter.waiting.length > 0 || (counter.exhausted && (counter.settleable > 0 || counter.toReturn > 0))) this.schedule(counter);
  }

  private retryHeld(counter: Counter): void {
    counter.waiting = counter.held.concat(counter.waiting);
    counter.held = [];
    this.schedule(counter);
  }

  /**
   * Places to ask for ahead of the counter's requests: what the key's requests since the last answer
   * come to over the next 20 ms. None for a key not seen in the last lease time, none once the window
   * ran low, none while nobody could ask for them back.
   */
  private leaseSize(counter: Counter, now: number): number {
    if (counter.exhausted || counter.leaseInFlight || !this.listening || this.subscriber!.status !== 'ready') return 0;
    const elapsed = now - counter.answeredAt;
    if (elapsed > LEASE_MS) return 0;
    return Math.min(MAX_LEASE, Math.floor((counter.demand * LEASE_HORIZON_MS) / Math.max(1, elapsed)));
  }

  /** Another replica needs places of this counter: give back what is unused, take no more leases. */
  private readonly onReclaim = (channel: string, name: string): void => {
    if (channel !== this.reclaimChannel) return;
    const counter = this.counters.get(name);
    if (counter === undefined) return;
    counter.exhausted = true;
    this.endLeases(counter);
    if (counter.settleable > 0 || counter.toReturn > 0) this.schedule(counter);
  };

  /** Settles the leases of counters gone quiet, and forgets counters with nothing left to do. */
  private sweep(nowMs: number): void {
    for (const [name, counter] of this.counters) {
      const busy = counter.scheduled || counter.callsInFlight > 0 || counter.waiting.length > 0 || counter.held.length > 0;
      if (busy) continue;
      if (counter.resetMs <= nowMs) {
        this.counters.delete(name); // The window is over: its places no longer matter.
      } else if (nowMs - counter.seenAt > LEASE_MS) {
        this.endLeases(counter);
        if (counter.settleable > 0 || counter.toReturn > 0) this.schedule(counter);
        else this.counters.delete(name);
      }
    }
  }

  private key(keyId: string, policy: RateLimitPolicy, windowStart: number): string {
    return `${this.prefix}{${keyId}}:${policy.period}:${windowStart}`;
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
  return {
    name,
    resetMs,
    limit,
    lease: undefined,
    spare: undefined,
    settleable: 0,
    toReturn: 0,
    exhausted: false,
    demand: 0,
    answeredAt: -Infinity,
    seenAt: 0,
    waiting: [],
    held: [],
    retryMs: FIRST_RETRY_MS,
    scheduled: false,
    leaseInFlight: false,
    callsInFlight: 0,
  };
}
