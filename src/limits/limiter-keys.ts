import type { Period } from './window.js';

/**
 * The limiter's names in Redis, in one place: replicas of every version must agree on them, or a
 * rolling upgrade would count one window twice. The key id is the hash tag, so all of a key's
 * counters, and each counter's lease book, share one Cluster slot.
 */

/** A window's count: `<prefix>{<keyId>}:<period>:<windowStartMs>`. */
export function counterKey(prefix: string, keyId: string, period: Period, windowStart: number): string {
  return `${prefix}{${keyId}}:${period}:${windowStart}`;
}

/** A sliding limit's slots (a hash of slot → places): `<prefix>{<keyId>}:sliding:<period>`. */
export function slidingKey(prefix: string, keyId: string, period: Period): string {
  return `${prefix}{${keyId}}:sliding:${period}`;
}

/** Beside each count, the places leased from it and not yet settled (docs/decisions/0006). */
export function leaseBookKey(counter: string): string {
  return counter + ':lease';
}

/** Where a replica that needs leased places back asks for them; the message is the counter's key. */
export function reclaimChannel(prefix: string): string {
  return prefix + 'quota-reclaim';
}
