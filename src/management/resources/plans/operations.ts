/** Rate limit plans and their bindings to keys (docs/guides/plans.md). */
import { isDeepStrictEqual } from 'node:util';
import { Type } from '@sinclair/typebox';
import { AppError } from '../../../errors.js';
import { perOf, shownPeriod, type CostRule } from '../../../plans/plan.js';
import { PLAN_UNIT_DEFAULT } from '../../../plans/usage-pricing.js';
import type { RequestMatch } from '../../../plans/request-match.js';
import type { PlanWithKeys } from '../../../store/plan-repository.js';
import { consumerAudit, keyAudit, planAudit } from '../../audit-views.js';
import { defineOperation } from '../../operation.js';
import { pageOf, positionAfter } from '../../pages.js';
import type { RequestMatchInput } from '../../request-match-schemas.js';
import { checkRouteReferences, planRouteReferences } from '../routes/references.js';
import {
  ApplyPlanRequest,
  ApplyPlanResponse,
  CreatePlanRequest,
  DeletePlanQuery,
  DeletePlanResponse,
  ListPlansQuery,
  ListPlansResponse,
  PlanResponse,
  RemovePlanRequest,
  RemovePlanResponse,
  UpdatePlanRequest,
} from './schemas.js';
import { DEFAULT_PAGE_SIZE, RateLimitId } from '../../schemas.js';
import { isoTimestamp } from '../../time-format.js';
import {
  createPlanProblems,
  limitsOfCreate,
  limitsOfUpdate,
  requiredLimitFields,
  updatePlanProblems,
} from './problems.js';

const TAG = 'Rate limit plans';
const PLAN_PATH = '/rate-limit/:rateLimitId';
const planParams = {
  schema: Type.Object({ rateLimitId: { ...RateLimitId, description: 'The plan id' } }),
  notFound: 'rate_limit_not_found',
} as const;
const PLAN_NOT_FOUND = { rate_limit_not_found: 'No plan has that id' } as const;

/** A stored match as the API shows it (the response type is mutable). */
const copyOf = ({
  routeIds,
  methods,
  pathPrefix,
  caseInsensitive,
  body,
}: RequestMatch): RequestMatchInput => ({
  ...(routeIds !== undefined && { routeIds: [...routeIds] }),
  ...(methods !== undefined && { methods: [...methods] }),
  ...(pathPrefix !== undefined && { pathPrefix }),
  ...(caseInsensitive !== undefined && { caseInsensitive }),
  ...(body !== undefined && { body: { pointer: body.pointer, values: [...body.values] } }),
});

/** A stored cost as the API shows it: the fields it was given. */
const costView = ({ match, cost, reserve, settle, settleMax }: CostRule): PlanResponse['costs'][number] => ({
  match: copyOf(match),
  ...(cost !== undefined && { cost }),
  ...(reserve !== undefined && { reserve: { ...reserve } }),
  ...(settle !== undefined && { settle: 'json' in settle ? { json: [...settle.json] } : { ...settle } }),
  ...(settleMax !== undefined && { settleMax }),
});

/** A plan in both shapes (the seed's `limit` and `period`, its first limit, and every limit), with what is bound to it. */
function planView(plan: PlanWithKeys): PlanResponse {
  const [first] = plan.limits;
  return {
    rateLimitId: plan.rateLimitId,
    description: plan.description,
    limit: first!.limit,
    period: shownPeriod(first!),
    createdAt: isoTimestamp(plan.createdAt),
    limits: plan.limits.map((rule) => ({
      name: rule.name,
      limit: rule.limit,
      period: shownPeriod(rule),
      algorithm: rule.algorithm,
      ...(rule.burst !== undefined && { burst: rule.burst }),
      ...(rule.match !== undefined && { match: copyOf(rule.match) }),
      per: perOf(rule),
    })),
    costs: plan.costs.map(costView),
    unit: plan.unit,
    lastUpdated: isoTimestamp(plan.lastUpdated),
    keyCount: plan.keyCount,
    consumerCount: plan.consumerCount,
  };
}

export const planOperations = [
  defineOperation({
    id: 'createRateLimitPlan',
    method: 'post',
    path: '/rate-limit/create',
    scope: 'plans:write',
    tag: TAG,
    summary: 'Create a rate limit plan under a caller-chosen id',
    description:
      "One limit as `limit` and `period` (the seed's body), or one to four as `limits`. Every plan response carries both shapes: `limit` and `period` are the first of `limits`. A limit with a `match` counts only the requests it matches; `costs` give requests their cost (docs/guides/plans.md, docs/guides/credits.md). Route ids in matches must name routes.",
    body: { schema: CreatePlanRequest, check: createPlanProblems, required: requiredLimitFields },
    success: {
      status: 201,
      description: 'Created: the plan, its limits with their defaults filled in',
      schema: PlanResponse,
    },
    errors: { rate_limit_exists: 'A plan with that rateLimitId exists; plans are not overwritten' },
    async handle({ body, res, ctx }) {
      const { rateLimitId, description = '', costs = [], unit = PLAN_UNIT_DEFAULT } = body;
      const createdAt = ctx.now();
      const plan = { rateLimitId, description, limits: limitsOfCreate(body), costs, unit, createdAt };
      await ctx.audited(res, async ({ plans, routes }) => {
        await checkRouteReferences(planRouteReferences(body), routes);
        if (!(await plans.insert(plan))) {
          throw new AppError(
            'rate_limit_exists',
            `A rate limit plan with id "${rateLimitId}" already exists`,
          );
        }
        return {
          result: undefined,
          action: 'plan.create',
          target: { type: 'plan', id: rateLimitId },
          before: null,
          after: planAudit(plan),
        };
      });
      res.status(201).json(planView({ ...plan, lastUpdated: createdAt, keyCount: 0, consumerCount: 0 }));
    },
  }),

  defineOperation({
    id: 'listRateLimitPlans',
    method: 'get',
    path: '/rate-limit',
    scope: 'plans:read',
    tag: TAG,
    summary: 'List plans, oldest first, with the number of keys and consumers bound to each',
    query: { schema: ListPlansQuery },
    success: { status: 200, description: 'One page of plans', schema: ListPlansResponse },
    async handle({ query, res, ctx }) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const rows = await ctx.plans.list(positionAfter(query.cursor), limit + 1);
      const { items, nextCursor } = pageOf(rows, limit, (p) => ({
        at: p.createdAt.getTime(),
        id: p.rateLimitId,
      }));
      const body: ListPlansResponse = {
        rateLimits: items.map(planView),
        ...(nextCursor !== undefined && { nextCursor }),
      };
      res.json(body);
    },
  }),

  defineOperation({
    id: 'getRateLimitPlan',
    method: 'get',
    path: PLAN_PATH,
    scope: 'plans:read',
    tag: TAG,
    summary: 'Show a plan with the number of keys and consumers bound to it',
    params: planParams,
    success: { status: 200, description: 'The plan', schema: PlanResponse },
    errors: PLAN_NOT_FOUND,
    async handle({ params, res, ctx }) {
      const plan = await ctx.plans.get(params.rateLimitId);
      if (!plan) throw new AppError('rate_limit_not_found');
      res.json(planView(plan));
    },
  }),

  defineOperation({
    id: 'updateRateLimitPlan',
    method: 'patch',
    path: PLAN_PATH,
    scope: 'plans:write',
    tag: TAG,
    summary: "Change a plan's description, limits, costs or unit",
    description:
      'Takes effect on every replica within 1 s. `limits` replaces every limit and `costs` every cost; `limit` and `period` change a plan of one limit (a plan of several answers 400 `validation_failed`). The current windows keep what they have spent (a limit with a match: by its name): lowering a limit below what its window has admitted refuses the rest of that window.',
    params: planParams,
    body: { schema: UpdatePlanRequest, check: updatePlanProblems },
    success: { status: 200, description: 'The plan as it now is', schema: PlanResponse },
    errors: PLAN_NOT_FOUND,
    async handle({ params: { rateLimitId }, body, res, ctx }) {
      const { plan, changed } = await ctx.audited(res, async ({ plans, routes }) => {
        const before = await plans.get(rateLimitId, true);
        if (!before) throw new AppError('rate_limit_not_found');
        await checkRouteReferences(planRouteReferences(body), routes);
        const changes = {
          description: body.description,
          limits: limitsOfUpdate(body, before.limits),
          costs: body.costs,
          unit: body.unit,
        };
        // Setting what is already set changes nothing: no entry, and lastUpdated stays.
        const same = (field: keyof typeof changes) =>
          changes[field] === undefined || isDeepStrictEqual(changes[field], before[field]);
        if (same('description') && same('limits') && same('costs') && same('unit'))
          return { result: { plan: before, changed: false }, unchanged: true as const };
        const after = (await plans.update(rateLimitId, changes, ctx.now()))!;
        return {
          result: { plan: after, changed: true },
          action: 'plan.update',
          target: { type: 'plan', id: rateLimitId },
          before: planAudit(before),
          after: planAudit(after),
        };
      });
      // Counters are kept per key and window, not per plan: the current windows keep what they spent.
      if (changed) await ctx.announce({ kind: 'plan', rateLimitId });
      res.json(planView(plan));
    },
  }),

  defineOperation({
    id: 'deleteRateLimitPlan',
    method: 'delete',
    path: PLAN_PATH,
    scope: 'plans:write',
    tag: TAG,
    summary: 'Delete a plan; with force=true, unbind its keys and consumers first',
    description:
      'A forced delete records one audit entry for the plan and one for each key and consumer it unbound.',
    params: planParams,
    query: { schema: DeletePlanQuery },
    success: { status: 200, description: 'Deleted', schema: DeletePlanResponse },
    errors: {
      ...PLAN_NOT_FOUND,
      rate_limit_in_use:
        'Keys or consumers are bound to the plan and `force` is not `true`; the body adds `keyCount` and `consumerCount`',
    },
    async handle({ params: { rateLimitId }, query: { force = false }, res, ctx }) {
      const unbound = await ctx.audited(res, async ({ plans }) => {
        const before = await plans.get(rateLimitId, true);
        if (!before) throw new AppError('rate_limit_not_found');
        const { keyCount, consumerCount } = before;
        if ((keyCount > 0 || consumerCount > 0) && !force) {
          throw new AppError(
            'rate_limit_in_use',
            `The rate limit plan ${rateLimitId} is bound to ${keyCount} key(s) and ${consumerCount} consumer(s); unbind them or delete with force=true`,
            undefined,
            { keyCount, consumerCount },
          );
        }
        const { keys, consumers } = await plans.delete(rateLimitId, ctx.now());
        // Each key and consumer unbound gets an entry of its own, so its trail (targetId=<id>) shows why its plan went.
        const preceding = [
          ...keys.map((key) => ({
            action: 'key.remove_plan' as const,
            target: { type: 'key', id: key.id },
            before: { ...keyAudit(key), rateLimitId },
            after: keyAudit(key),
          })),
          ...consumers.map((consumer) => ({
            action: 'consumer.remove_plan' as const,
            target: { type: 'consumer', id: consumer.id },
            before: { ...consumerAudit(consumer), rateLimitId },
            after: consumerAudit(consumer),
          })),
        ];
        const counts = { keyCount: keys.length, consumerCount: consumers.length };
        return {
          result: counts,
          action: 'plan.delete',
          target: { type: 'plan', id: rateLimitId },
          before: { ...planAudit(before), ...counts },
          after: null,
          preceding,
        };
      });
      await ctx.announce({ kind: 'plan', rateLimitId });
      const from = [
        ...(unbound.keyCount > 0 ? [`${unbound.keyCount} key(s)`] : []),
        ...(unbound.consumerCount > 0 ? [`${unbound.consumerCount} consumer(s)`] : []),
      ];
      const note = from.length > 0 ? ` (unbound from ${from.join(' and ')})` : '';
      const body: DeletePlanResponse = {
        rateLimitId,
        message: `Rate limit plan ${rateLimitId} has been deleted${note}`,
      };
      res.json(body);
    },
  }),

  defineOperation({
    id: 'applyRateLimitPlan',
    method: 'post',
    path: '/api-keys/apply-rate-limit',
    scope: 'keys:write',
    tag: TAG,
    summary: "Bind a plan to a key, replacing the key's previous plan",
    description:
      "The key's `lastUpdated` is now, unless the key already had this plan: then nothing changes, and nothing is recorded. If both are unknown the answer is `rate_limit_not_found` (checked first).",
    body: { schema: ApplyPlanRequest },
    success: { status: 200, description: 'Bound', schema: ApplyPlanResponse },
    errors: { rate_limit_not_found: 'Unknown plan (checked first)', key_not_found: 'Unknown key' },
    async handle({ body: { consumerApiKeyId, rateLimitId }, res, ctx }) {
      const bound = await ctx.audited(res, async ({ keys, plans }) => {
        if (!(await plans.get(rateLimitId))) throw new AppError('rate_limit_not_found');
        const before = await keys.get(consumerApiKeyId, true);
        if (!before) throw new AppError('key_not_found');
        // The plan it already has: no change, so no entry and lastUpdated stays (as for unbinding none).
        if (before.rateLimitId === rateLimitId) return { result: false, unchanged: true as const };
        await keys.bindPlan(consumerApiKeyId, rateLimitId, ctx.now());
        const after = { ...keyAudit(before), rateLimitId };
        return {
          result: true,
          action: 'key.apply_plan',
          target: { type: 'key', id: consumerApiKeyId },
          before: keyAudit(before),
          after,
        };
      });
      if (bound) await ctx.announce({ kind: 'key', keyId: consumerApiKeyId });
      const body: ApplyPlanResponse = {
        consumerApiKeyId,
        rateLimitId,
        message: `Rate limit plan ${rateLimitId} applied to consumer API key ${consumerApiKeyId}`,
      };
      res.json(body);
    },
  }),

  defineOperation({
    id: 'removeRateLimitPlan',
    method: 'post',
    path: '/api-keys/remove-rate-limit',
    scope: 'keys:write',
    tag: TAG,
    summary: "Unbind a key's plan",
    description: 'Also 200 when the key had no plan. Takes effect on every replica within 1 s.',
    body: { schema: RemovePlanRequest },
    success: { status: 200, description: 'The key has no plan now', schema: RemovePlanResponse },
    errors: { key_not_found: 'No key has that id' },
    async handle({ body: { consumerApiKeyId }, res, ctx }) {
      const removed = await ctx.audited(res, async ({ keys }) => {
        const before = await keys.get(consumerApiKeyId, true);
        if (!before) throw new AppError('key_not_found');
        if (before.rateLimitId === null) return { result: false, unchanged: true as const };
        await keys.unbindPlan(consumerApiKeyId, ctx.now());
        const after = { ...keyAudit(before), rateLimitId: null };
        return {
          result: true,
          action: 'key.remove_plan',
          target: { type: 'key', id: consumerApiKeyId },
          before: keyAudit(before),
          after,
        };
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
    },
  }),
];
