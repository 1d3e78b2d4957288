/** Rate limit plans and their bindings to keys (contract sections 2 and 7). */
import type { Router } from 'express';
import { AppError } from '../errors.js';
import type { PlanWithKeys } from '../store/plan-repository.js';
import type { ManagementContext } from './context.js';
import { jsonBody } from './json-body.js';
import { methodNotAllowed, page, pageQuery } from './route-helpers.js';
import { PATHS } from './routes.js';
import {
  RATE_LIMIT_ID_PATTERN,
  type ApplyPlanResponse,
  type CreatePlanResponse,
  type DeletePlanResponse,
  type ListPlansResponse,
  type PlanResponse,
  type RemovePlanResponse,
} from './schemas.js';
import { isoTimestamp } from './time-format.js';
import {
  validateApplyPlan,
  validateCreatePlan,
  validateDeletePlanQuery,
  validateListPlansQuery,
  validateRemovePlan,
  validateUpdatePlan,
} from './validation.js';

const RATE_LIMIT_ID = new RegExp(RATE_LIMIT_ID_PATTERN);

function planView(plan: PlanWithKeys): PlanResponse {
  return {
    rateLimitId: plan.rateLimitId,
    description: plan.description,
    limit: plan.limit,
    period: plan.period,
    createdAt: isoTimestamp(plan.createdAt),
    lastUpdated: isoTimestamp(plan.lastUpdated),
    keyCount: plan.keyCount,
  };
}

export function addPlanRoutes(router: Router, ctx: ManagementContext): void {
  const { keys, plans } = ctx;

  /** A path id that cannot name a plan is answered without a query. */
  const planIdOf = (id: string): string => {
    if (id.length > 128 || !RATE_LIMIT_ID.test(id)) throw new AppError('rate_limit_not_found');
    return id;
  };

  router
    .route(PATHS.createPlan)
    .post(jsonBody, async (req, res) => {
      const { rateLimitId, description = '', limit, period } = validateCreatePlan(req.body);
      const createdAt = ctx.now();
      if (!(await plans.insert({ rateLimitId, description, limit, period, createdAt }))) {
        throw new AppError('rate_limit_exists', `A rate limit plan with id "${rateLimitId}" already exists`);
      }
      const body: CreatePlanResponse = { rateLimitId, description, limit, period, createdAt: isoTimestamp(createdAt) };
      res.status(201).json(body);
    })
    .all(methodNotAllowed('POST'));

  router
    .route(PATHS.plans)
    .get(async (req, res) => {
      const query = pageQuery(validateListPlansQuery, req.query);
      const rows = await plans.list(query.after, query.limit + 1);
      const { items, nextCursor } = page(rows, query.limit, (p) => ({ at: p.createdAt.getTime(), id: p.rateLimitId }));
      const body: ListPlansResponse = { rateLimits: items.map(planView), ...(nextCursor !== undefined && { nextCursor }) };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD'));

  router
    .route(PATHS.plan)
    .get(async (req, res) => {
      const plan = await plans.get(planIdOf(req.params.rateLimitId));
      if (!plan) throw new AppError('rate_limit_not_found');
      res.json(planView(plan));
    })
    .patch(jsonBody, async (req, res) => {
      const rateLimitId = planIdOf(req.params.rateLimitId);
      const plan = await plans.update(rateLimitId, validateUpdatePlan(req.body), ctx.now());
      if (!plan) throw new AppError('rate_limit_not_found');
      // Counters are kept per key and window, not per plan: the current windows keep what they spent.
      await ctx.announce({ kind: 'plan', rateLimitId });
      res.json(planView(plan));
    })
    .delete(async (req, res) => {
      const rateLimitId = planIdOf(req.params.rateLimitId);
      const { force = false } = validateDeletePlanQuery({ ...req.query });
      const result = await plans.delete(rateLimitId, force, ctx.now());
      if (!result.deleted) {
        if (result.inUse === undefined) throw new AppError('rate_limit_not_found');
        throw new AppError(
          'rate_limit_in_use',
          `The rate limit plan ${rateLimitId} is bound to ${result.inUse} key(s); unbind them or delete with force=true`,
          undefined,
          { keyCount: result.inUse },
        );
      }
      await ctx.announce({ kind: 'plan', rateLimitId });
      const unbound = result.unbound > 0 ? ` (unbound from ${result.unbound} key(s))` : '';
      const body: DeletePlanResponse = { rateLimitId, message: `Rate limit plan ${rateLimitId} has been deleted${unbound}` };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD, PATCH, DELETE'));

  router
    .route(PATHS.applyPlan)
    .post(jsonBody, async (req, res) => {
      const { consumerApiKeyId, rateLimitId } = validateApplyPlan(req.body);
      if (!(await plans.get(rateLimitId))) throw new AppError('rate_limit_not_found');
      if (!(await keys.bindPlan(consumerApiKeyId, rateLimitId, ctx.now()))) throw new AppError('key_not_found');
      await ctx.announce({ kind: 'key', keyId: consumerApiKeyId });
      const body: ApplyPlanResponse = {
        consumerApiKeyId,
        rateLimitId,
        message: `Rate limit plan ${rateLimitId} applied to consumer API key ${consumerApiKeyId}`,
      };
      res.json(body);
    })
    .all(methodNotAllowed('POST'));

  router
    .route(PATHS.removePlan)
    .post(jsonBody, async (req, res) => {
      const { consumerApiKeyId } = validateRemovePlan(req.body);
      const result = await keys.unbindPlan(consumerApiKeyId, ctx.now());
      if (result === 'missing') throw new AppError('key_not_found');
      if (result === 'unbound') await ctx.announce({ kind: 'key', keyId: consumerApiKeyId });
      const body: RemovePlanResponse = {
        consumerApiKeyId,
        rateLimitId: null,
        message:
          result === 'unbound'
            ? `Rate limit plan removed from consumer API key ${consumerApiKeyId}`
            : `Consumer API key ${consumerApiKeyId} had no rate limit plan`,
      };
      res.json(body);
    })
    .all(methodNotAllowed('POST'));
}
