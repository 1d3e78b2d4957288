/** Consumer API keys: create, list, show, change, roll, delete (contract sections 2 and 6). */
import type { Response, Router } from 'express';
import { AppError } from '../errors.js';
import { KEY_CHANGE_POLL_MS } from '../keys/key-change-feed.js';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../keys/secret.js';
import { planOf, type Plan } from '../limits/plan.js';
import { tightest, type LimitState } from '../limits/rate-limiter.js';
import type { KeyRow, KeySettings } from '../store/key-repository.js';
import { keyAudit } from './audit-views.js';
import { requires } from './authenticate.js';
import type { ManagementContext } from './context.js';
import { bodyTextOf, jsonBody } from './json-body.js';
import { membersAsWritten, RawJson, sendJson } from './json-as-written.js';
import { keySummary, keyView, keyState, type WithRawMetadata } from './key-views.js';
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

/**
 * The settings a validated body names, in the repository's terms (a validated timestamp always
 * parses); `metadata` as the caller wrote it, read from the body's text, so it is returned as given.
 */
function settingsOf(input: UpdateKeyRequest, res: Response): Partial<KeySettings> {
  return {
    ...(input.name !== undefined && { name: input.name }),
    ...(input.enabled !== undefined && { enabled: input.enabled }),
    ...(input.externalId !== undefined && { externalId: input.externalId }),
    ...(input.metadata !== undefined && { metadata: membersAsWritten(bodyTextOf(res)).get('metadata')! }),
    ...(input.expiresAt !== undefined && { expiresAt: input.expiresAt === null ? null : parseTimestamp(input.expiresAt)! }),
  };
}

/**
 * Every replica hears of a roll within two reads of the recorded changes, even one whose change
 * message was lost: no previous secret is stated to end sooner.
 */
const SHORTEST_GRACE_MS = 2 * KEY_CHANGE_POLL_MS;

/**
 * `previousSecretExpiresAt`: the first whole second (the resolution of the API's timestamps) at least
 * the grace, and at least SHORTEST_GRACE_MS, after the roll. With a grace the previous secret is kept
 * until exactly then, on every replica; with none it is refused at once wherever the roll is known,
 * and by then everywhere.
 */
function previousSecretEnd(now: Date, gracePeriodSeconds: number): Date {
  return new Date(Math.ceil((now.getTime() + Math.max(gracePeriodSeconds * 1000, SHORTEST_GRACE_MS)) / 1000) * 1000);
}

/** Whether every setting named already has that value (metadata compared as the text stored). */
function changesNothing(key: KeyRow, changes: Partial<KeySettings>): boolean {
  return Object.entries(changes).every(([field, value]) => {
    const current = key[field as keyof KeySettings];
    return current instanceof Date && value instanceof Date ? current.getTime() === value.getTime() : current === value;
  });
}

export function addKeyRoutes(router: Router, ctx: ManagementContext): void {
  const { keys, plans, logger } = ctx;

  async function rateLimitsOf(key: KeyRow): Promise<KeyDetailResponse['usage']['rateLimits']> {
    const bound = key.rateLimitId === null ? undefined : await plans.get(key.rateLimitId);
    const plan: Plan | undefined = bound ? planOf(bound.limits) : ctx.defaultRateLimit;
    if (!plan) return null;
    let states: LimitState[];
    try {
      states = await ctx.limiter.peek(key.id, plan, ctx.clock());
    } catch (err) {
      logger.warn({ keyId: key.id, err: (err as Error).message }, 'rate limit state unavailable');
      throw new AppError('limit_unavailable');
    }
    // The seed's fields report the limit with the fewest requests left; `limits` has them all.
    const fewest = tightest(states);
    return {
      limit: fewest.rule.limit,
      remaining: fewest.remaining,
      resetTime: isoTimestamp(fewest.resetMs),
      limits: states.map(({ rule, remaining, resetMs }) => ({ name: rule.name, limit: rule.limit, period: rule.period, remaining, resetTime: isoTimestamp(resetMs) })),
    };
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
      const settings = { enabled: true, externalId: null, metadata: '{}', expiresAt: null, ...settingsOf(input, res), name: input.name };
      const id = generateKeyId();
      const secret = generateSecret();
      const createdAt = ctx.now();
      const key = await ctx.audited(res, async ({ keys, plans }) => {
        if (rateLimitId !== null && !(await plans.get(rateLimitId))) throw new AppError('rate_limit_not_found');
        await keys.insert({ ...settings, id, secretHash: hashSecret(secret), secretCiphertext: encryptSecret(secret, ctx.sealingKey), rateLimitId, createdAt });
        const created = (await keys.get(id))!;
        return { result: created, action: 'key.create', target: { type: 'key', id }, before: null, after: keyAudit(created) };
      });
      const body: WithRawMetadata<CreateKeyResponse> = {
        id,
        name: key.name,
        secret,
        createdAt: createTimestamp(createdAt),
        ...keyState(key),
        metadata: new RawJson(key.metadata),
      };
      sendJson(res.status(201).location(`${ctx.prefix}${PATHS.keys}/${id}`), body);
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
      const body: WithRawMetadata<KeyDetailResponse> = {
        ...keyView(key, ctx.encryptionKeys),
        usage: {
          totalRequests: totals.totalRequests,
          successfulRequests: totals.successfulRequests,
          failedRequests: totals.failedRequests,
          rateLimits,
          endpoints: totals.endpoints,
          usageByCustomer: totals.usageByCustomer,
          ...(totals.usageByCustomerNotListed && { usageByCustomerNotListed: totals.usageByCustomerNotListed }),
        },
      };
      sendJson(res, body);
    })
    .patch(requires(REQUIRED_SCOPES.key.patch), jsonBody, async (req, res) => {
      const id = keyIdOf(req.params.consumerApiKeyId);
      const changes = settingsOf(validateUpdateKey(req.body), res);
      const { key, changed } = await ctx.audited(res, async ({ keys }) => {
        const before = await keys.get(id, true);
        if (!before) throw new AppError('key_not_found');
        // Setting what is already set changes nothing: no entry, and lastUpdated stays.
        if (changesNothing(before, changes)) return { result: { key: before, changed: false }, unchanged: true as const };
        const after = (await keys.update(id, changes, ctx.now()))!;
        return { result: { key: after, changed: true }, action: 'key.update', target: { type: 'key', id }, before: keyAudit(before), after: keyAudit(after) };
      });
      if (changed) await ctx.announce({ kind: 'key', keyId: id });
      sendJson(res, keyView(key, ctx.encryptionKeys));
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
      const previousUntil = previousSecretEnd(now, gracePeriodSeconds);
      const secret = generateSecret();
      await ctx.audited(res, async ({ keys }) => {
        const before = await keys.get(id, true);
        if (!before) throw new AppError('key_not_found');
        await keys.roll(id, { hash: hashSecret(secret), ciphertext: encryptSecret(secret, ctx.sealingKey) }, gracePeriodSeconds === 0 ? null : previousUntil, now);
        const after = { ...keyAudit(before), secretRolled: true, previousSecretExpiresAt: isoTimestamp(previousUntil) };
        return { result: undefined, action: 'key.roll', target: { type: 'key', id }, before: keyAudit(before), after };
      });
      await ctx.announce({ kind: 'key', keyId: id });
      const body: RollKeyResponse = { consumerApiKeyId: id, secret, previousSecretExpiresAt: isoTimestamp(previousUntil) };
      res.json(body);
    })
    .all(methodNotAllowed('POST'));
}
