import type { Balance } from './balance.js';
import { planOf, type Plan } from './plan.js';

/**
 * Whose limits: the key's own plan, or the plan of the consumer that holds the key
 * (docs/guides/consumers.md).
 */
export type Scope = 'key' | 'consumer';

/** The name of a subject's id in the API's answers and in events. */
export const ID_FIELDS = { key: 'consumerApiKeyId', consumer: 'consumerId' } as const satisfies Record<
  Scope,
  string
>;

/**
 * One holder of limits and credits a request is charged to. A subject whose plan holds no limits and
 * that holds no balance is charged nothing; a key's consumer is still passed then, since where the
 * key's counts live follows it (limits/limiter-keys.ts).
 */
export interface Subject {
  readonly scope: Scope;
  readonly id: string;
  readonly plan: Plan;
  /** Its prepaid credits (docs/guides/credits.md); absent: none. */
  readonly balance?: Balance;
}

/** A key's or consumer's own terms: its plan and its credits, either possibly absent. */
export interface Terms {
  readonly plan: Plan | undefined;
  readonly balance: Balance | undefined;
}

const NO_LIMITS = planOf([]);

const charges = (terms: Terms): boolean => terms.plan !== undefined || terms.balance !== undefined;

function subject(scope: Scope, id: string, { plan, balance }: Terms): Subject {
  return balance === undefined
    ? { scope, id, plan: plan ?? NO_LIMITS }
    : { scope, id, plan: plan ?? NO_LIMITS, balance };
}

/**
 * The subjects a key's requests are decided against: the key (its plan and credits) and its consumer
 * (its plan and credits), the key first; undefined when neither holds a limit or a balance (the key is
 * not limited). Built once per key, when it is looked up, so the request path allocates none.
 */
export function subjectsOf(
  keyId: string,
  key: Terms,
  consumer: ({ readonly id: string } & Terms) | undefined,
): readonly Subject[] | undefined {
  if (consumer === undefined) return charges(key) ? [subject('key', keyId, key)] : undefined;
  if (!charges(key) && !charges(consumer)) return undefined;
  return [subject('key', keyId, key), subject('consumer', consumer.id, consumer)];
}

/** Whether a subject is charged anything: a limit, or a balance. */
export const isCharged = (s: Subject): boolean => s.plan.limits.length > 0 || s.balance !== undefined;
