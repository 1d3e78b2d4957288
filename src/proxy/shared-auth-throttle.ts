import {
  AuthThrottle,
  UNCOUNTED,
  type AllowedAttempt,
  type Attempt,
  type FailureThrottle,
  type RefusedAttempt,
} from './auth-throttle.js';
import { windowAt, type RateLimitPolicy, type Window } from '../plans/window.js';
import { canonicalAddress } from '../net/canonical-address.js';
import type { Logger } from '../ops/logger.js';
import type { RedisClient } from '../redis/connect.js';

/** How long failures known without a check gather before they are added to the shared counts. */
const UNCHECKED_SEND_MS = 500;

/**
 * Failed authentications per client address counted across replicas: one Redis counter per address
 * and window holds the budget every replica spends.
 *
 * A credential from an address that has not failed on this replica in the current window, with no
 * other such check in flight here, is checked at once and counted afterwards if wrong: valid
 * credentials from ordinary clients never wait for Redis. Any other check first reserves a guess in
 * the shared counter (INCR, before the credential is looked at): beyond the limit it is refused
 * unchecked and the address is blocked here until the window ends; a credential that turns out
 * valid gives its guess back. So however many guesses arrive at once, on however many replicas, at
 * most the limit plus one per replica are checked in a window. A burst repeating one secret reserves
 * once: it is one guess.
 *
 * A credential known wrong without a check (a wrong checksum) is counted here at once and added to
 * the shared count with the others of its half second from its address: a flood of them costs
 * Redis one call per address and half second, nothing per request.
 *
 * While Redis does not answer, each replica falls back to its own count (the in-process
 * `AuthThrottle`, which it keeps all along): N replicas then check up to N times the limit.
 */
export class SharedAuthThrottle implements FailureThrottle {
  private readonly local: AuthThrottle;
  /** address → end of the window in which the shared count passed the limit; oldest first. */
  private readonly blocked = new Map<string, number>();
  /** `<address> <secret>` → the reservation being taken for that guess. */
  private readonly reserving = new Map<string, Promise<Attempt>>();
  /** `<address> <window start>` → failures known without a check, not yet in the shared count. */
  private readonly unsent = new Map<string, { address: string; window: Window; failed: number }>();
  private sending: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: RedisClient,
    /** Redis key prefix and the throttle's name: `<prefix>auth-failures:<name>:{<address>}:<window>`. */
    private readonly keyPrefix: string,
    private readonly policy: RateLimitPolicy,
    private readonly logger: Logger,
    private readonly maxAddresses = 10_000,
  ) {
    this.local = new AuthThrottle(policy, maxAddresses);
  }

  blockedUntil(spelling: string, nowMs: number): number | undefined {
    const address = canonicalAddress(spelling);
    const shared = this.blocked.get(address);
    if (shared !== undefined && shared > nowMs) return shared;
    return this.local.blockedUntil(address, nowMs);
  }

  attempt(spelling: string, nowMs: number, secret: string): Attempt | Promise<Attempt> {
    // One address spelled two ways is one Redis counter, on every replica.
    const address = canonicalAddress(spelling);
    const until = this.blockedUntil(address, nowMs);
    if (until !== undefined) return { allowed: false, retryAtMs: until };
    const guess = `${address} ${secret}`;
    const decided = this.reserving.get(guess);
    if (decided !== undefined) return decided.then((first) => (first.allowed ? UNCOUNTED : first));
    const record = this.local.record(address, nowMs);
    const unsuspected = record.failed === 0 && record.checking === 0;
    const local = this.local.attempt(address, nowMs);
    if (!local.allowed) return local;
    const window = windowAt(this.policy.period, nowMs);
    if (unsuspected) {
      return {
        allowed: true,
        settle: (failed) => {
          local.settle(failed);
          if (failed)
            void this.count(address, window, 1).then(
              (n) => n !== undefined && n >= this.policy.limit && this.block(address, window),
            );
        },
      };
    }
    const reserved = this.reserve(address, window, local).finally(() => this.reserving.delete(guess));
    this.reserving.set(guess, reserved);
    return reserved;
  }

  failedUnchecked(spelling: string, nowMs: number): RefusedAttempt | undefined {
    const address = canonicalAddress(spelling);
    const until = this.blockedUntil(address, nowMs);
    if (until !== undefined) return { allowed: false, retryAtMs: until };
    this.local.failedUnchecked(address, nowMs);
    const window = windowAt(this.policy.period, nowMs);
    const name = `${address} ${window.start}`;
    const unsent = this.unsent.get(name);
    if (unsent !== undefined) unsent.failed++;
    else this.unsent.set(name, { address, window, failed: 1 });
    this.sending ??= setTimeout(() => void this.sendUnchecked(), UNCHECKED_SEND_MS).unref();
    return undefined;
  }

  /**
   * The failures counted by `failedUnchecked` since the last send, added to the shared counts: one
   * transaction per address (a Redis Cluster keeps each address's counts in one slot, not all in one).
   */
  private async sendUnchecked(): Promise<void> {
    this.sending = undefined;
    const batch = [...this.unsent.values()];
    this.unsent.clear();
    await Promise.all(
      batch.map(async ({ address, window, failed }) => {
        const count = await this.count(address, window, failed);
        if (count !== undefined && count >= this.policy.limit) this.block(address, window);
      }),
    );
  }

  /** Takes one guess from the shared budget before the credential is checked. */
  private async reserve(address: string, window: Window, local: AllowedAttempt): Promise<Attempt> {
    const count = await this.count(address, window, 1);
    // Redis unreachable: this replica's own count decides (it allowed `local`).
    if (count === undefined) return local;
    if (count > this.policy.limit) {
      local.settle(false);
      this.block(address, window);
      return { allowed: false, retryAtMs: window.end };
    }
    return {
      allowed: true,
      settle: (failed) => {
        local.settle(failed);
        if (!failed) void this.count(address, window, -1);
        else if (count >= this.policy.limit) this.block(address, window);
      },
    };
  }

  /** Adds `delta` to the address's shared count of the window; the count after, or undefined when Redis did not answer. */
  private async count(address: string, window: Window, delta: number): Promise<number | undefined> {
    const key = `${this.keyPrefix}{${address}}:${window.start}`;
    try {
      const replies = await this.client
        .multi()
        .incrby(key, delta)
        .pexpireat(key, window.end + 1_000)
        .exec();
      const [err, value] = replies?.[0] ?? [new Error('no reply')];
      if (err) throw err;
      return Number(value);
    } catch (err) {
      this.logger.warn(
        { err: (err as Error).message },
        'shared failed-authentication count unavailable; counting on this replica only',
      );
      return undefined;
    }
  }

  private block(address: string, window: Window): void {
    if (!this.blocked.has(address) && this.blocked.size >= this.maxAddresses)
      this.blocked.delete(this.blocked.keys().next().value as string);
    this.blocked.set(address, window.end);
  }
}
