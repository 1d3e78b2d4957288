import { canonicalAddress } from '../net/canonical-address.js';
import { windowAt, type RateLimitPolicy } from '../plans/window.js';

/** A credential from this address may be checked; `settle` says how the check went, exactly once. */
export interface AllowedAttempt {
  readonly allowed: true;
  /** `failed`: the credential opened nothing. Otherwise (valid, or not checked at all) the attempt is given back. */
  settle(failed: boolean): void;
}

/** The address has spent its budget: answer 429 without checking the credential. */
export interface RefusedAttempt {
  readonly allowed: false;
  /** When the address may try again: the end of the window, epoch ms. */
  readonly retryAtMs: number;
}

export type Attempt = AllowedAttempt | RefusedAttempt;

/** A check that spends nothing from the budget (a credential already vouched for, or already counted). */
export const UNCOUNTED: AllowedAttempt = { allowed: true, settle: () => undefined };

/**
 * Failed authentications per client address: a budget of wrong credentials per window, counted per
 * canonical address (src/net/canonical-address.ts: one address spelled two ways is one budget). A credential
 * whose answer memory does not already know is checked only after `attempt` allows it, so guesses
 * sent all at once cannot all be checked before the first failure is counted.
 */
export interface FailureThrottle {
  /** From memory alone (no I/O): the end of the window in which `address` is refused, or `undefined`. */
  blockedUntil(address: string, nowMs: number): number | undefined;
  /**
   * Before checking `secret`; answers synchronously when memory can. The same secret sent again while
   * its first attempt is still being decided is the same guess, and shares that answer.
   */
  attempt(address: string, nowMs: number, secret: string): Attempt | Promise<Attempt>;
  /**
   * A credential known wrong without checking it (a wrong checksum): counted against the address's
   * budget with no I/O of its own; refused as throttled when the address is blocked already.
   */
  failedUnchecked(address: string, nowMs: number): RefusedAttempt | undefined;
}

/** One address in the current window: failures counted, and checks begun but not yet settled. */
export interface AddressRecord {
  readonly windowEnd: number;
  failed: number;
  checking: number;
}

class LocalAttempt implements AllowedAttempt {
  readonly allowed = true;
  private settled = false;

  constructor(private readonly record: AddressRecord) {}

  settle(failed: boolean): void {
    if (this.settled) return;
    this.settled = true;
    this.record.checking--;
    if (failed) this.record.failed++;
  }
}

/**
 * Failed authentications per client address, in fixed windows, in process. A check in flight holds a
 * place in the budget until it is settled, so `limit` guesses at most are checked per window however
 * many arrive at once. An address over the limit gets 429 for secrets the key cache doesn't already
 * know, so guessing stops reaching the database while valid keys behind the same address (a NAT, an
 * untrusted load balancer) keep working. Bounded: the oldest addresses are forgotten first.
 */
export class AuthThrottle implements FailureThrottle {
  private readonly records = new Map<string, AddressRecord>();

  constructor(
    readonly policy: RateLimitPolicy,
    private readonly maxAddresses = 10_000,
  ) {}

  blockedUntil(address: string, nowMs: number): number | undefined {
    const r = this.records.get(canonicalAddress(address));
    return r !== undefined && r.windowEnd > nowMs && r.failed >= this.policy.limit ? r.windowEnd : undefined;
  }

  attempt(address: string, nowMs: number): Attempt {
    const r = this.record(address, nowMs);
    if (r.failed + r.checking >= this.policy.limit) return { allowed: false, retryAtMs: r.windowEnd };
    r.checking++;
    return new LocalAttempt(r);
  }

  failedUnchecked(address: string, nowMs: number): RefusedAttempt | undefined {
    const r = this.record(address, nowMs);
    if (r.failed >= this.policy.limit) return { allowed: false, retryAtMs: r.windowEnd };
    r.failed++;
    return undefined;
  }

  /** The address's record of the window at `nowMs`, empty when it has none yet. */
  record(spelling: string, nowMs: number): AddressRecord {
    const address = canonicalAddress(spelling);
    const r = this.records.get(address);
    if (r !== undefined && r.windowEnd > nowMs) return r;
    if (r === undefined && this.records.size >= this.maxAddresses) {
      this.records.delete(this.records.keys().next().value as string);
    }
    const fresh = { windowEnd: windowAt(this.policy.period, nowMs).end, failed: 0, checking: 0 };
    this.records.set(address, fresh);
    return fresh;
  }
}
