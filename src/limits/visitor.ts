import { createHash } from 'node:crypto';
import { visitorAddress } from '../net/address-prefix.js';
import type { LimitRule } from '../plans/plan.js';
import type { Subject } from '../plans/subject.js';

/**
 * One visitor of a key or consumer (docs/decisions/0090): what its limits with `per` count it by,
 * worked out once per request, and only for a request whose subjects hold such a limit.
 */
export interface Visitor {
  /** Its client address, IPv6 by its /64 (net/address-prefix.ts); '' unknown: those share one count. */
  readonly address: string;
  /** Its customer id (a long one by its digest); '' none: those share one count. */
  readonly customer: string;
  /** Both as one name: a visitor's counts are found by it (the limiters' spans and tallies). */
  readonly name: string;
}

/** Longer customer ids are counted by their SHA-256, so that a visitor's memory does not grow with its id. */
const LONGEST_KEPT_ID = 64;

export function visitorOf(client: string | undefined, customerId: string | undefined): Visitor {
  const address = client === undefined ? '' : visitorAddress(client);
  const customer =
    customerId === undefined
      ? ''
      : customerId.length <= LONGEST_KEPT_ID
        ? customerId
        : '#' + createHash('sha256').update(customerId).digest('base64url');
  return { address, customer, name: `${address}|${customer}` };
}

/** Whether a request for `subjects` has a visitor to work out: some limit of theirs has a `per`. */
export function countsVisitors(subjects: readonly Subject[]): boolean {
  for (let s = 0; s < subjects.length; s++) if (subjects[s]!.plan.perVisitor) return true;
  return false;
}

/**
 * What sets the count of `rule` for `visitor` apart from the other visitors': '' for a limit of the
 * whole key or consumer, `:a:<address>` or `:c:<customer id>` for one per visitor (a request with no
 * visitor given, as a peek, reads the count of those without one).
 */
export function visitorSuffix(rule: LimitRule, visitor: Visitor | undefined): string {
  if (rule.per === undefined) return '';
  return rule.per === 'clientAddress' ? `:a:${visitor?.address ?? ''}` : `:c:${visitor?.customer ?? ''}`;
}
