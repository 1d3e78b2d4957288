import { countsOwnRequests, type LimitRule } from '../plans/plan.js';
import type { Subject } from '../plans/subject.js';
import type { Period } from '../plans/window.js';
import { visitorSuffix, type Visitor } from './visitor.js';

/**
 * The limiter's names in Redis, in one place: replicas of every version must agree on them, or a
 * rolling upgrade would count one window twice.
 *
 * One decision's counts share one Cluster slot, so that one script call can charge them all: their
 * hash tag is the consumer's id when the key has a consumer, else the key's id. A key without a
 * consumer keeps the names every earlier version used, `<prefix>{<keyId>}`; a consumer's counts are
 * `<prefix>{<consumerId>}:consumer`, and those of a key it holds `<prefix>{<consumerId>}:key:<keyId>`.
 * Each count's lease book sits beside it. A limit with a match counts only the requests it matches,
 * so its count is its own: the name of the period's count, then `:m:<limit name>`. A limit per visitor
 * counts each visitor in a count of its own: then `:a:<address>` or `:c:<customer id>` (visitor.ts). A subject's balance
 * is `<base>:credits`. A key that moves to another consumer finds its counts and balance under new
 * names: they are moved there (recovery/key-homes.ts), and its home, `<prefix>{<keyId>}:home`, says where
 * they are while it has a consumer.
 */

/**
 * Counters outlive their window by this much. The window start is in the key name, so a late key
 * is never reused; the grace only keeps a replica whose clock lags (NTP keeps it to milliseconds)
 * from finding the counter already gone and starting it again at zero.
 */
export const EXPIRY_GRACE_MS = 5_000;

/** The hash tag of a decision's counts: its consumer's id, else its (first) subject's. */
export function hashTagOf(subjects: readonly Subject[]): string {
  for (const subject of subjects) if (subject.scope === 'consumer') return subject.id;
  return subjects[0]!.id;
}

/** Where a subject's counts start, under `hashTag` (hashTagOf its decision). */
export function countsBase(prefix: string, subject: Pick<Subject, 'scope' | 'id'>, hashTag: string): string {
  if (subject.scope === 'consumer') return `${prefix}{${subject.id}}:consumer`;
  return subject.id === hashTag ? `${prefix}{${subject.id}}` : `${prefix}{${hashTag}}:key:${subject.id}`;
}

/** The marks of settle calls under `hashTag` (settle-script.ts): `<prefix>{<hashTag>}:settled:<call id>`. */
export function settleMarkBase(prefix: string, hashTag: string): string {
  return `${prefix}{${hashTag}}:settled:`;
}

/** A window's count: `<base>:<period>:<windowStartMs>`. */
export function counterKey(base: string, period: Period, windowStart: number): string {
  return `${base}:${period}:${windowStart}`;
}

/** A sliding limit's slots (a hash of slot → units): `<base>:sliding:<period>`. */
export function slidingKey(base: string, period: Period): string {
  return `${base}:sliding:${period}`;
}

/**
 * The count of `rule` (in its window starting at `windowStart`, for a fixed limit) under `base`, that
 * of `visitor` for a limit per visitor: a token bucket's `<base>:bucket:<period>`, a concurrency
 * limit's `<base>:concurrency`, both hashes (consume-script.ts), take the visitor's suffix too.
 */
export function limitCountKey(base: string, rule: LimitRule, windowStart: number, visitor?: Visitor): string {
  const count = countName(base, rule, windowStart);
  return (countsOwnRequests(rule) ? `${count}:m:${rule.name}` : count) + visitorSuffix(rule, visitor);
}

function countName(base: string, rule: LimitRule, windowStart: number): string {
  switch (rule.algorithm) {
    case 'fixed':
      return counterKey(base, rule.period, windowStart);
    case 'sliding':
      return slidingKey(base, rule.period);
    case 'tokenBucket':
      return `${base}:bucket:${rule.period}`;
    case 'concurrency':
      return `${base}:concurrency`;
  }
}

/** A subject's balance (limits/balance-lua.ts), under its counts' base: one decision's keys share a slot. */
export function balanceKey(base: string): string {
  return base + ':credits';
}

/**
 * The plan a subject's counts under `base` were last decided by (plan-switches.ts): its tag and limits,
 * JSON, so that a switch knows which counts the old plan spent in.
 */
export function planMarkKey(base: string): string {
  return base + ':plan';
}

/** Beside each count, the units leased from it and not yet settled (docs/decisions/0006). */
export function leaseBookKey(counter: string): string {
  return counter + ':lease';
}

/** Where a replica that needs leased units back asks for them; the message is the count's key. */
export function reclaimChannel(prefix: string): string {
  return prefix + 'quota-reclaim';
}

/** The hash tag a key's own counts are under while it has a consumer (recovery/key-homes.ts), in the key's own slot. */
export function keyHomeKey(prefix: string, keyId: string): string {
  return `${prefix}{${keyId}}:home`;
}

/** Where a replica that found keys lost (not all of Redis' data) tells the others (recovery/loss-detection.ts). */
export function lossChannel(prefix: string): string {
  return prefix + 'keys-lost';
}
