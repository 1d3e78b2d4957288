/** Consumer API keys: create, list, show, change, roll, delete (contract sections 2 and 6). */
import type { Router } from 'express';
import { AppError } from '../errors.js';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../keys/secret.js';
import type { RateLimitPolicy } from '../limits/window.js';
import type { KeyRow, KeySettings } from '../store/key-repository.js';
import { keyAudit } from './audit-views.js';
import { requires } from './authenticate.js';
import type { ManagementContext } from './context.js';
import { jsonBody } from './json-body.js';
import { keySummary, keyView, keyState } from './key-views.js';
import { canBeKeyId, methodNotAllowed, optionalJsonBody, page, pageQuery } from './route-helpers.js';
import { PATHS, REQUIRED_SCOPES } from './routes.js';
import type {
  CreateKeyResponse,
  DeleteKeyResponse,
  KeyDetailResponse,
  ListKeysResponse,
  RollKeyResponse,
  UpdateKeyRequest,
} from './schemas.js';
import { createTimestamp, isoTimestamp } from './time-format.js';
import { parseTimestamp, validateCreateKey, validateListQuery, validateRollKey, validateUpdateKey } from './validation.js';

/** The settings a validated body names, in the repository's terms (a validated timestamp always parses). */
function settingsOf(input: UpdateKeyRequest): Partial<KeySettings> {
  return {
    ...(input.name !== undefined && { name: input.name }),
    ...(input.enabled !== undefined && { enabled: input.enabled }),
    ...(input.externalId !== undefined && { externalId: input.externalId }),
    ...(input.metadata !== undefined && { metadata: JSON.stringify(input.metadata) }),
    ...(input.expiresAt !== undefined && { expiresAt: input.expiresAt === null ? null : parseTimestamp(input.expiresAt)! }),
  };
}

export function addKeyRoutes(router: Router, ctx: ManagementContext): void {
  const { keys, plans, logger } = ctx;

  async function rateLimitsOf(key: KeyRow): Promise<KeyDetailResponse['usage']['rateLimits']> {
    const plan = key.rateLimitId === null ? undefined : await plans.get(key.rateLimitId);
    const policy: RateLimitPolicy | undefined = plan ? { limit: plan.limit, period: plan.period } : ctx.defaultRateLimit;
    if (!policy) return null;
    let state;
    try {
      state = await ctx.limiter.peek(key.id, policy, ctx.clock());
    } catch (err) {
      logger.warn({ keyId: key.id, err: (err as Error).message }, 'rate limit state unavailable');
      throw new AppError('limit_unavailable');
    }
    return { limit: state.limit, remaining: state.remaining, resetTime: isoTimestamp(state.resetMs) };
  }

  const keyIdOf = (id: string): string => {
    if (!canBeKeyId(id)) throw new AppError('key_not_found');
    return id;
  };

  router
    .route(PATHS.createKey)
    .post(requires(REQUIRED_SCOPES.createKey.post), jsonBody, async (req, res) => {
      const input = validateCreateKey(req.body);
      const rateLimitId = input.rateLimitId ?? null;
      const settings = { enabled: true, externalId: null, metadata: '{}', expiresAt: null, ...settingsOf(input), name: input.name };
      const id = generateKeyId();
      const secret = generateSecret();
      const createdAt = ctx.now();
      const key = await ctx.audited(res, async ({ keys, plans }) => {
        if (rateLimitId !== null && !(await plans.get(rateLimitId))) throw new AppError('rate_limit_not_found');
        await keys.insert({ ...settings, id, secretHash: hashSecret(secret), secretCiphertext: encryptSecret(secret, ctx.sealingKey), rateLimitId, createdAt });
        const created = (await keys.get(id))!;
        return { result: created, action: 'key.create', target: { type: 'key', id }, before: null, after: keyAudit(created) };
      });
      const body: CreateKeyResponse = {
        id,
        name: key.name,
        secret,
        createdAt: createTimestamp(createdAt),
        ...keyState(key),
        metadata: input.metadata ?? {},
      };
      res.status(201).location(`${ctx.prefix}${PATHS.keys}/${id}`).json(body);
    })
    .all(methodNotAllowed('POST'));

  router
    .route(PATHS.keys)
    .get(requires(REQUIRED_SCOPES.keys.get), async (req, res) => {
      const query = pageQuery(validateListQuery, req.query);
      const rows = await keys.list(query, query.after, query.limit + 1);
      const { items, nextCursor } = page(rows, query.limit, (k) => ({ at: k.createdAt.getTime(), id: k.id }));
      const body: ListKeysResponse = { apiKeys: items.map(keySummary), ...(nextCursor !== undefined && { nextCursor }) };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD'));

  router
    .route(PATHS.key)
    .get(requires(REQUIRED_SCOPES.key.get), async (req, res) => {
      const key = await keys.get(keyIdOf(req.params.consumerApiKeyId));
      if (!key) throw new AppError('key_not_found');
      const [totals, rateLimits] = await Promise.all([ctx.usage.read(key.id), rateLimitsOf(key)]);
      const body: KeyDetailResponse = {
        ...keyView(key, ctx.encryptionKeys),
        usage: {
          totalRequests: totals.totalRequests,
          successfulRequests: totals.successfulRequests,
          failedRequests: totals.failedRequests,
          rateLimits,
          endpoints: totals.endpoints,
          usageByCustomer: totals.usageByCustomer,
        },
      };
      res.json(body);
    })
    .patch(requires(REQUIRED_SCOPES.key.patch), jsonBody, async (req, res) => {
      const id = keyIdOf(req.params.consumerApiKeyId);
      const changes = settingsOf(validateUpdateKey(req.body));
      const key = await ctx.audited(res, async ({ keys }) => {
        const before = await keys.get(id, true);
        if (!before) throw new AppError('key_not_found');
        const after = (await keys.update(id, changes, ctx.now()))!;
        return { result: after, action: 'key.update', target: { type: 'key', id }, before: keyAudit(before), after: keyAudit(after) };
      });
      await ctx.announce({ kind: 'key', keyId: id });
      res.json(keyView(key, ctx.encryptionKeys));
    })
    .delete(requires(REQUIRED_SCOPES.key.delete), async (req, res) => {
      const id = keyIdOf(req.params.consumerApiKeyId);
      await ctx.audited(res, async ({ keys }) => {
        const before = await keys.get(id, true);
        if (!before || !(await keys.delete(id))) throw new AppError('key_not_found');
        return { result: undefined, action: 'key.delete', target: { type: 'key', id }, before: keyAudit(before), after: null };
      });
      await ctx.announce({ kind: 'key', keyId: id });
      const body: DeleteKeyResponse = { consumerApiKeyId: id, message: `Consumer API key ${id} has been deleted` };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD, PATCH, DELETE'));

  router
    .route(PATHS.rollKey)
    .post(requires(REQUIRED_SCOPES.rollKey.post), optionalJsonBody, async (req, res) => {
      const id = keyIdOf(req.params.consumerApiKeyId);
      const { gracePeriodSeconds = 0 } = validateRollKey(req.body);
      const now = ctx.now();
      // Whole seconds, so the instant the answer names is exactly when the previous secret stops working.
      const previousUntil = gracePeriodSeconds === 0 ? null : new Date(Math.floor(now.getTime() / 1000 + gracePeriodSeconds) * 1000);
      const secret = generateSecret();
      await ctx.audited(res, async ({ keys }) => {
        const before = await keys.get(id, true);
        if (!before) throw new AppError('key_not_found');
        await keys.roll(id, { hash: hashSecret(secret), ciphertext: encryptSecret(secret, ctx.sealingKey) }, previousUntil, now);
        const after = { ...keyAudit(before), secretRolled: true, previousSecretExpiresAt: isoTimestamp(previousUntil ?? now) };
        return { result: undefined, action: 'key.roll', target: { type: 'key', id }, before: keyAudit(before), after };
      });
      await ctx.announce({ kind: 'key', keyId: id });
      const body: RollKeyResponse = { consumerApiKeyId: id, secret, previousSecretExpiresAt: isoTimestamp(previousUntil ?? now) };
      res.json(body);
    })
    .all(methodNotAllowed('POST'));
}
