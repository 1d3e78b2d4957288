/**
 * The portal's plan page in its API (src/portal/README.md): the consumer's plan with where its limits
 * stand, and a switch between the public plans, through the management operations themselves.
 */
import { AppError } from '../../errors.js';
import type { ManagementContext } from '../../management/context.js';
import { defineOperation } from '../../management/operation.js';
import type { PortalSessionRow } from '../../store/portal-session-repository.js';
import { resultOf } from '../management-call.js';
import { portalCallOf } from '../portal-session.js';
import { PortalPlan, SwitchPlanRequest } from './schemas.js';

const TAG = 'Portal';
const getConsumer = resultOf('getConsumer');
const getPlan = resultOf('getRateLimitPlan');
const updateConsumer = resultOf('updateConsumer');

interface PlanAnswer {
  rateLimitId: string;
  description: string;
  limits: PortalPlan['publicPlans'][number]['limits'];
  costs: PortalPlan['publicPlans'][number]['costs'];
  unit: string;
}

async function planView(
  rateLimitId: string,
  res: Parameters<typeof getPlan>[1],
  ctx: ManagementContext,
): Promise<PlanAnswer | undefined> {
  try {
    const plan = await getPlan({ params: { rateLimitId } }, res, ctx);
    const { description, limits, costs, unit } = plan as PlanAnswer;
    return { rateLimitId, description, limits, costs, unit };
  } catch (err) {
    if (err instanceof AppError && err.code === 'rate_limit_not_found') return undefined;
    throw err;
  }
}

/** The consumer's plan with where its limits stand, its credits, and the plans it may switch to. */
async function portalPlan(
  session: PortalSessionRow,
  res: Parameters<typeof getPlan>[1],
  ctx: ManagementContext,
): Promise<PortalPlan> {
  const consumer = (await getConsumer({ params: { consumerId: session.consumerId } }, res, ctx)) as {
    rateLimitId: string | null;
    credits: PortalPlan['credits'];
    usage: { rateLimits: NonNullable<PortalPlan['current']>['state'] };
  };
  const { settings } = await ctx.portal.get();
  const current = consumer.rateLimitId === null ? undefined : await planView(consumer.rateLimitId, res, ctx);
  const publicPlans: PlanAnswer[] = [];
  for (const rateLimitId of settings.publicPlans) {
    const plan = await planView(rateLimitId, res, ctx);
    if (plan) publicPlans.push(plan);
  }
  return {
    current: current ? { ...current, state: consumer.usage.rateLimits } : null,
    credits: consumer.credits,
    publicPlans,
  };
}

export const portalPlanOperations = [
  defineOperation({
    id: 'portalGetPlan',
    method: 'get',
    path: '/plan',
    scope: null,
    tag: TAG,
    summary:
      "The consumer's plan with what remains of each limit, its credits, and the plans it may switch to",
    success: { status: 200, description: 'The plan', schema: PortalPlan },
    async handle({ res, ctx }) {
      res.json(await portalPlan(portalCallOf(res).session, res, ctx));
    },
  }),

  defineOperation({
    id: 'portalSwitchPlan',
    method: 'post',
    path: '/plan',
    scope: null,
    tag: TAG,
    summary: 'Switch the consumer to one of the public plans (what the current windows spent is kept)',
    body: { schema: SwitchPlanRequest },
    success: { status: 200, description: 'The plan as it now is', schema: PortalPlan },
    errors: { rate_limit_not_found: 'The plan is not one of the public plans' },
    async handle({ body: { rateLimitId }, res, ctx }) {
      const { session } = portalCallOf(res);
      const { settings } = await ctx.portal.get();
      if (!settings.publicPlans.includes(rateLimitId)) throw new AppError('rate_limit_not_found');
      await updateConsumer({ params: { consumerId: session.consumerId }, body: { rateLimitId } }, res, ctx);
      res.json(await portalPlan(session, res, ctx));
    },
  }),
];
