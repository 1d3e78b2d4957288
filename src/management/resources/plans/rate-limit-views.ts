/** `usage.rateLimits` of a key or consumer detail: where each limit of its plan stands (docs/guides/plans.md, docs/guides/consumers.md). */
import { AppError } from '../../../errors.js';
import { capacityOf, isConcurrency, perOf, planOf, shownPeriod, type Plan } from '../../../plans/plan.js';
import { limitName, tightest, type LimitState } from '../../../limits/rate-limiter.js';
import { subjectsOf, type Subject } from '../../../plans/subject.js';
import type { KeyRow } from '../../../store/key-row.js';
import type { ManagementContext } from '../../context.js';
import type { KeyDetailResponse } from '../keys/schemas.js';
import { isoTimestamp } from '../../time-format.js';

export type RateLimitsView = KeyDetailResponse['usage']['rateLimits'];
type LimitView = Omit<NonNullable<RateLimitsView>['limits'][number], 'remaining'> & {
  readonly remaining: number;
};

/**
 * Where every limit of `subjects` stands (a key's and its consumer's, or a consumer's own), read
 * without counting a request; null when none applies.
 */
export async function rateLimitsOf(
  subjects: readonly Subject[] | undefined,
  ctx: ManagementContext,
): Promise<RateLimitsView> {
  if (subjects === undefined) return null;
  let states: LimitState[];
  try {
    states = await ctx.limiter.peek(subjects, ctx.clock());
  } catch (err) {
    ctx.logger.warn(
      { subjects: subjects.map(({ scope, id }) => `${scope}:${id}`), err: (err as Error).message },
      'rate limit state unavailable',
    );
    throw new AppError('limit_unavailable');
  }
  if (states.length === 0) return null;
  return {
    ...seedSummary(states, ctx.clock()),
    limits: states.map((state) => ({
      ...limitView(state),
      remaining: state.rule.per === undefined ? state.remaining : null,
    })),
  };
}

/**
 * The seed's `limit`, `remaining` and `resetTime` (docs/guides/plans.md): the limit with the fewest
 * units left of those with one count and one window. Limits per visitor (no one count) and
 * concurrency limits (no window) are left out of the choice when others exist; a plan of only such
 * limits shows what a new visitor would have: of each limit, its whole capacity (a concurrency limit
 * of the key as a whole: its places free now), the least of them, at once (`resetTime` now).
 */
function seedSummary(states: readonly LimitState[], nowMs: number) {
  const counted = states.filter((state) => state.rule.per === undefined && !isConcurrency(state.rule));
  if (counted.length > 0) {
    const fewest = tightest(counted);
    return { limit: fewest.rule.limit, remaining: fewest.remaining, resetTime: isoTimestamp(fewest.resetMs) };
  }
  const fresh = states.map(({ rule, remaining }) => ({
    limit: rule.limit,
    remaining: rule.per === undefined ? remaining : capacityOf(rule),
  }));
  const least = fresh.reduce((best, next) => (next.remaining < best.remaining ? next : best));
  return { ...least, resetTime: isoTimestamp(nowMs) };
}

/**
 * One limit as verify's `limits` (and, but for a limit per visitor's `remaining`, the detail's
 * `usage.rateLimits.limits`) show it.
 */
export function limitView({ scope, rule, remaining, resetMs }: LimitState): LimitView {
  return {
    name: limitName(scope, rule),
    limit: rule.limit,
    period: shownPeriod(rule),
    remaining,
    resetTime: isConcurrency(rule) ? null : isoTimestamp(resetMs),
    scope,
    per: perOf(rule),
  };
}

/** The plan a bound `rateLimitId` names, as the limiter takes it; undefined when none is bound (or it just went). */
export async function boundPlan(
  rateLimitId: string | null,
  ctx: ManagementContext,
): Promise<Plan | undefined> {
  const bound = rateLimitId === null ? undefined : await ctx.plans.get(rateLimitId);
  return bound && planOf(bound.limits);
}

/** The subjects a key's requests are charged to, as the proxy's key cache builds them. */
export async function keySubjects(
  key: Pick<KeyRow, 'id' | 'rateLimitId' | 'consumerId' | 'balance'>,
  ctx: ManagementContext,
): Promise<readonly Subject[] | undefined> {
  const consumer = key.consumerId === null ? undefined : await ctx.consumers.get(key.consumerId);
  const consumerTerms = consumer && {
    id: consumer.id,
    plan: await boundPlan(consumer.rateLimitId, ctx),
    balance: consumer.balance ?? undefined,
  };
  const plan = (await boundPlan(key.rateLimitId, ctx)) ?? ctx.defaultRateLimit;
  return subjectsOf(key.id, { plan, balance: key.balance ?? undefined }, consumerTerms);
}
