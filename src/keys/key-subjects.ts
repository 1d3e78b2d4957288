import type { RequestFacts } from '../plans/request-match.js';
import type { Subject } from '../plans/subject.js';
import type { ResolvedKey } from './key-cache.js';

/**
 * The subjects a request of `key` is charged to: the limits its plans apply to the request (a plan
 * with route-aware limits or costs narrows them by `facts`); undefined when none limits the key.
 */
export const subjectsFor = (
  key: Pick<ResolvedKey, 'pricing' | 'subjects'>,
  facts: RequestFacts,
): readonly Subject[] | undefined =>
  key.pricing === undefined ? key.subjects : key.pricing.subjectsFor(facts);
