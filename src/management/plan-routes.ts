/** Rate limit plans and their bindings to keys (contract sections 2 and 7). */
import { isDeepStrictEqual } from 'node:util';
import type { Router } from 'express';
import { AppError } from '../errors.js';
import type { PlanWithKeys } from '../store/plan-repository.js';
import { keyAudit, planAudit } from './audit-views.js';
import { requires } from './authenticate.js';
import type { ManagementContext } from './context.js';
import { jsonBody } from './json-body.js';
import { methodNotAllowed, page, pageQuery } from './route-helpers.js';
import { PATHS, REQUIRED_SCOPES } from './routes.js';
import {
  RATE_LIMIT_ID_PATTERN,
  type ApplyPlanResponse,
  type DeletePlanResponse,
  type ListPlansResponse,
  type PlanResponse,
  type RemovePlanResponse,
} from './schemas.js';
import { isoTimestamp } from './time-format.js';
import {
  limitsOfCreate,
  limitsOfUpdate,
  validateApplyPlan,
  validateCreatePlan,
  validateDeletePlanQuery,
  validateListPlansQuery,
  validateRemovePlan,
  validateUpdatePlan,
} from './validation.js';

const RATE_LIMIT_ID = new RegExp(RATE_LIMIT_ID_PATTERN);


/** A plan in both shapes: the seed's `limit` and `period` (its first limit) and every limit. */
function planView(plan: PlanWithKeys): PlanResponse {
  const [first] = plan.limits;
  return {
    rateLimitId: plan.rateLimitId,
    description: plan.description,
    limit: first!.limit,
    period: first!.period,
    createdAt: isoTimestamp(plan.createdAt),
    limits: plan.limits.map(({ name, limit, period, algorithm }) => ({ name, limit, period, algorithm })),
    lastUpdated: isoTimestamp(plan.lastUpdated),
    keyCount: plan.keyCount,
  };
}

export function addPlanRoutes(router: Router, ctx: ManagementContext): void {
  const { plans } = ctx;

  /** A path id that cannot name a plan is answered without a query. */
  const planIdOf = (id: string): string => {
    if (id.length > 128 || !RATE_LIMIT_ID.test(id)) throw new AppError('rate_limit_not_found');
    return id;
  };

  router
    .route(PATHS.createPlan)
    .post(requires(REQUIRED_SCOPES.createPlan.post), jsonBody, async (req, res) => {
      const body = validateCreatePlan(req.body);
      const { rateLimitId, description = '' } = body;
      const createdAt = ctx.now();
      const plan = { rateLimitId, description, limits: limitsOfCreate(body), createdAt };
      await ctx.audited(res, async ({ plans }) => {
        if (!(await plans.insert(plan))) {
          throw new AppError('rate_limit_exists', `A rate limit plan with id "${rateLimitId}" already exists`);
        }
        return { result: undefined, action: 'plan.create', target: { type: 'plan', id: rateLimitId }, before: null, after: planAudit(plan) };
      });
      res.status(201).json(planView({ ...plan, lastUpdated: createdAt, keyCount: 0 }));
    })
    .all(methodNotAllowed('POST'));

  router
    .route(PATHS.plans)
    .get(requires(REQUIRED_SCOPES.plans.get), async (req, res) => {
      const query = pageQuery(validateListPlansQuery, req.query);
      const rows = await plans.list(query.after, query.limit + 1);
      const { items, nextCursor } = page(rows, query.limit, (p) => ({ at: p.createdAt.getTime(), id: p.rateLimitId }));
      const body: ListPlansResponse = { rateLimits: items.map(planView), ...(nextCursor !== undefined && { nextCursor }) };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD'));

  router
    .route(PATHS.plan)
    .get(requires(REQUIRED_SCOPES.plan.get), async (req, res) => {
      const plan = await plans.get(planIdOf(req.params.rateLimitId));
      if (!plan) throw new AppError('rate_limit_not_found');
      res.json(planView(plan));
    })
    .patch(requires(REQUIRED_SCOPES.plan.patch), jsonBody, async (req, res) => {
      const rateLimitId = planIdOf(req.params.rateLimitId);
      const body = validateUpdatePlan(req.body);
      const { plan, changed } = await ctx.audited(res, async ({ plans }) => {
        const before = await plans.get(rateLimitId, true);
        if (!before) throw new AppError('rate_limit_not_found');
        const changes = { description: body.description, limits: limitsOfUpdate(body, before.limits) };
        // Setting what is already set changes nothing: no entry, and lastUpdated stays.
        const sameDescription = changes.description === undefined || changes.description === before.description;
        const sameLimits = changes.limits === undefined || isDeepStrictEqual(changes.limits, before.limits);
        if (sameDescription && sameLimits) return { result: { plan: before, changed: false }, unchanged: true as const };
        const after = (await plans.update(rateLimitId, changes, ctx.now()))!;
        return { result: { plan: after, changed: true }, action: 'plan.update', target: { type: 'plan', id: rateLimitId }, before: planAudit(before), after: planAudit(after) };
      });
      // Counters are kept per key and window, not per plan: the current windows keep what they spent.
      if (changed) await ctx.announce({ kind: 'plan', rateLimitId });
      res.json(planView(plan));
    })
    .delete(requires(REQUIRED_SCOPES.plan.delete), async (req, res) => {
      const rateLimitId = planIdOf(req.params.rateLimitId);
      const { force = false } = validateDeletePlanQuery({ ...req.query });
      const unbound = await ctx.audited(res, async ({ plans }) => {
        const before = await plans.get(rateLimitId, true);
        if (!before) throw new AppError('rate_limit_not_found');
        if (before.keyCount > 0 && !force) {
          throw new AppError(
            'rate_limit_in_use',
            `The rate limit plan ${rateLimitId} is bound to ${before.keyCount} key(s); unbind them or delete with force=true`,
            undefined,
            { keyCount: before.keyCount },
          );
        }
        const unboundKeys = await plans.delete(rateLimitId, ctx.now());
        // Each key unbound gets an entry of its own, so its trail (targetId=<key>) shows why its plan went.
        const preceding = unboundKeys.map((key) => ({ action: 'key.remove_plan', target: { type: 'key', id: key.id }, before: { ...keyAudit(key), rateLimitId }, after: keyAudit(key) }));
        const n = unboundKeys.length;
        return { result: n, action: 'plan.delete', target: { type: 'plan', id: rateLimitId }, before: { ...planAudit(before), keyCount: n }, after: null, preceding };
      });
      await ctx.announce({ kind: 'plan', rateLimitId });
      const note = unbound > 0 ? ` (unbound from ${unbound} key(s))` : '';
      const body: DeletePlanResponse = { rateLimitId, message: `Rate limit plan ${rateLimitId} has been deleted${note}` };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD, PATCH, DELETE'));

  router
    .route(PATHS.applyPlan)
    .post(requires(REQUIRED_SCOPES.applyPlan.post), jsonBody, async (req, res) => {
      const { consumerApiKeyId, rateLimitId } = validateApplyPlan(req.body);
      const bound = await ctx.audited(res, async ({ keys, plans }) => {
        if (!(await plans.get(rateLimitId))) throw new AppError('rate_limit_not_found');
        const before = await keys.get(consumerApiKeyId, true);
        if (!before) throw new AppError('key_not_found');
        // The plan it already has: no change, so no entry and lastUpdated stays (as for unbinding none).
        if (before.rateLimitId === rateLimitId) return { result: false, unchanged: true as const };
        await keys.bindPlan(consumerApiKeyId, rateLimitId, ctx.now());
        const after = { ...keyAudit(before), rateLimitId };
        return { result: true, action: 'key.apply_plan', target: { type: 'key', id: consumerApiKeyId }, before: keyAudit(before), after };
      });
      if (bound) await ctx.announce({ kind: 'key', keyId: consumerApiKeyId });
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
    .post(requires(REQUIRED_SCOPES.removePlan.post), jsonBody, async (req, res) => {
      const { consumerApiKeyId } = validateRemovePlan(req.body);
      const removed = await ctx.audited(res, async ({ keys }) => {
        const before = await keys.get(consumerApiKeyId, true);
        if (!before) throw new AppError('key_not_found');
        if (before.rateLimitId === null) return { result: false, unchanged: true as const };
        await keys.unbindPlan(consumerApiKeyId, ctx.now());
        const after = { ...keyAudit(before), rateLimitId: null };
        return { result: true, action: 'key.remove_plan', target: { type: 'key', id: consumerApiKeyId }, before: keyAudit(before), after };
      });
      if (removed) await ctx.announce({ kind: 'key', keyId: consumerApiKeyId });
      const body: RemovePlanResponse = {
        consumerApiKeyId,
        rateLimitId: null,
        message: removed
          ? `Rate limit plan removed from consumer API key ${consumerApiKeyId}`
          : `Consumer API key ${consumerApiKeyId} had no rate limit plan`,
      };
      res.json(body);
    })
    .all(methodNotAllowed('POST'));
}
