/** Plans, identified by `rateLimitId`: created with their limits, costs and unit, changed in place. */
import type { components } from '../../generated/management-api.js';
import { answerOf, everyPage } from '../api-call.js';
import type { PlanItem } from '../config-file.js';
import type { AfterApply, Kind } from '../kind.js';
import { changedSettings, matchSettings } from '../settings.js';

type Plan = components['schemas']['PlanResponse'];
type Consumer = components['schemas']['Consumer'];
type Limit = Plan['limits'][number];
type Cost = Plan['costs'][number];

/** What a plan counts when it does not say (src/plans/usage-pricing.ts). */
const DEFAULT_UNIT = 'requests';

/**
 * Limits as the service shows them: named (default: the period; a concurrency limit `concurrency`),
 * with their algorithm (default fixed), a concurrency limit's period null, a token bucket's burst
 * (default its limit) and per (default key).
 */
function limitsOf(item: PlanItem): Limit[] {
  const declared = item.limits ?? [{ limit: item.limit!, period: item.period! }];
  return declared.map((l) => {
    const algorithm = l.algorithm ?? 'fixed';
    const period = algorithm === 'concurrency' ? null : l.period!;
    return {
      name: l.name ?? period ?? 'concurrency',
      limit: l.limit,
      period,
      algorithm,
      ...(algorithm === 'tokenBucket' && { burst: l.burst ?? l.limit }),
      ...(l.match && { match: matchSettings(l.match) }),
      per: l.per ?? 'key',
    };
  });
}

const costsOf = (costs: readonly Cost[]): Cost[] =>
  costs.map((c) => ({ ...c, match: matchSettings(c.match) }));

/** Consumers that still hold the plan once the file is applied: neither rebound by it nor pruned. */
function consumersBoundAfter(rateLimitId: string, { config, state, prune }: AfterApply): number {
  const declared = new Map((config.consumers ?? []).map((c) => [c.externalId, c]));
  const bound = (state.get('consumers') ?? []) as Consumer[];
  return bound.filter((consumer) => {
    if (consumer.rateLimitId !== rateLimitId) return false;
    if (consumer.externalId === null) return true;
    const item = declared.get(consumer.externalId);
    return item === undefined ? !prune : item.rateLimitId === rateLimitId;
  }).length;
}

export const plans: Kind<PlanItem, Plan> = {
  section: 'plans',
  noun: 'plan',
  list: (client) =>
    everyPage(async (cursor) => {
      const page = await answerOf(client.GET('/rate-limit', { params: { query: { limit: 1000, cursor } } }));
      return { items: page.rateLimits, nextCursor: page.nextCursor };
    }),
  identityOfItem: (item) => item.rateLimitId,
  identityOf: (plan) => plan.rateLimitId,
  differences: (item, plan) =>
    changedSettings(
      {
        description: item.description ?? '',
        limits: limitsOf(item),
        costs: costsOf(item.costs ?? []),
        unit: item.unit ?? DEFAULT_UNIT,
      },
      {
        description: plan.description,
        limits: plan.limits.map((l) => ({ ...l, ...(l.match && { match: matchSettings(l.match) }) })),
        costs: costsOf(plan.costs),
        unit: plan.unit,
      },
    ),
  async create(client, item) {
    await answerOf(client.POST('/rate-limit/create', { body: item }));
  },
  async update(client, plan, patch) {
    await answerOf(
      client.PATCH('/rate-limit/{rateLimitId}', {
        params: { path: { rateLimitId: plan.rateLimitId } },
        body: patch,
      }),
    );
  },
  async remove(client, plan, force) {
    await answerOf(
      client.DELETE('/rate-limit/{rateLimitId}', {
        params: { path: { rateLimitId: plan.rateLimitId }, query: force ? { force: true } : {} },
      }),
    );
  },
  inUse(plan, after) {
    const bound = consumersBoundAfter(plan.rateLimitId, after);
    return plan.keyCount + bound > 0 ? `${plan.keyCount} key(s) and ${bound} consumer(s) use it` : undefined;
  },
  exported: (plan) => ({
    rateLimitId: plan.rateLimitId,
    description: plan.description,
    limits: plan.limits,
    ...(plan.costs.length > 0 && { costs: plan.costs }),
    ...(plan.unit !== DEFAULT_UNIT && { unit: plan.unit }),
  }),
};
