/**
 * The management API: keys, plans and bindings behind the root token. Built from its dependencies and
 * never listening itself, so the server mounts it and tests run it in process.
 */
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { AppError, retryAfterOf } from '../errors.js';
import type { KeyEvents } from '../keys/key-events.js';
import {
  constantTimeEqual,
  decryptSecret,
  encryptSecret,
  generateKeyId,
  generateSecret,
  hashSecret,
} from '../keys/secret.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { RateLimitPolicy } from '../limits/window.js';
import type { Logger } from '../ops/logger.js';
import type { Metrics } from '../ops/metrics.js';
import type { KeyRepository, KeyRow, ListPosition, PlanRepository } from '../store/repositories.js';
import type { StorageHealth } from '../store/storage-health.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { isDatabaseUnavailable, isStorageRefusingWrites } from './db-errors.js';
import { jsonBody } from './json-body.js';
import { PATHS } from './routes.js';
import {
  DEFAULT_PAGE_SIZE,
  KEY_ID_PATTERN,
  MAX_KEY_ID_LENGTH,
  type ApplyPlanResponse,
  type CreateKeyResponse,
  type CreatePlanResponse,
  type DeleteKeyResponse,
  type KeyDetailResponse,
  type ListKeysQuery,
  type ListKeysResponse,
  type UsageTotals,
} from './schemas.js';
import { createTimestamp, isoTimestamp } from './time-format.js';
import { validateApplyPlan, validateCreateKey, validateCreatePlan, validateListQuery } from './validation.js';

export type { UsageTotals } from './schemas.js';

/** Stored usage of one key (flushed and pending), without `rateLimits`, which the limiter knows. */
export interface UsageTotalsReader {
  read(keyId: string): Promise<UsageTotals>;
}

export interface ManagementDeps {
  readonly keys: KeyRepository;
  readonly plans: PlanRepository;
  readonly usage: UsageTotalsReader;
  /** `peek()` gives `usage.rateLimits` without counting a request. */
  readonly limiter: RateLimiter;
  /** Told about every deleted key and every new binding, so key caches drop the entry. */
  readonly keyEvents: KeyEvents;
  /** [current, ...previous]: secrets are sealed with the first and opened with whichever fits. */
  readonly encryptionKeys: readonly Buffer[];
  readonly rootToken: string;
  /** Applies to keys with no plan bound; `undefined`: such keys are not limited. */
  readonly defaultRateLimit: RateLimitPolicy | undefined;
  /** MANAGEMENT_PREFIX: '' or a path such as `/admin`. */
  readonly prefix: string;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Epoch milliseconds: timestamps and rate-limit windows. */
  readonly clock: () => number;
  /** Told when the database refuses a write, so readiness says so until it takes writes again. */
  readonly storageHealth?: Pick<StorageHealth, 'refused'>;
}

const KEY_ID = new RegExp(KEY_ID_PATTERN);

/** A path id that cannot name a key is answered without a query (and can't upset the database). */
function canBeKeyId(id: string): boolean {
  return id.length <= MAX_KEY_ID_LENGTH && KEY_ID.test(id);
}

function methodNotAllowed(allow: string): RequestHandler {
  return (_req, res, next) => {
    res.set('Allow', allow);
    next(new AppError('method_not_allowed', `Method not allowed on this route (allowed: ${allow})`));
  };
}

function countAndNoStore(metrics: Metrics): RequestHandler {
  return (_req, res, next) => {
    // Responses carry secrets: no cache anywhere may keep them.
    res.set('Cache-Control', 'no-store');
    res.once('finish', () => metrics.managementRequests.inc({ status: String(res.statusCode) }));
    next();
  };
}

function requireRootToken(rootToken: string): RequestHandler {
  return (req, res, next) => {
    const match = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
    if (match && constantTimeEqual(match[1]!, rootToken)) {
      next();
      return;
    }
    // RFC 6750 §3: name the scheme; say "invalid_token" only when a token was actually presented.
    res.set(
      'WWW-Authenticate',
      match ? 'Bearer realm="tollgate", error="invalid_token"' : 'Bearer realm="tollgate"',
    );
    next(
      new AppError(
        'unauthorized',
        match ? 'The root token is not valid' : 'Authorization: Bearer <ROOT_TOKEN> is required',
      ),
    );
  };
}

/** Query errors on `cursor` alone are `invalid_cursor`; anything else about the query is `validation_failed`. */
function parseListQuery(query: Record<string, unknown>): { after: ListPosition | undefined; limit: number } {
  let parsed: ListKeysQuery;
  try {
    parsed = validateListQuery({ ...query });
  } catch (err) {
    if (err instanceof AppError && err.details?.every((d) => (d as { field?: string }).field === 'cursor')) {
      throw new AppError('invalid_cursor');
    }
    throw err;
  }
  let after: ListPosition | undefined;
  if (parsed.cursor !== undefined) {
    after = decodeCursor(parsed.cursor);
    if (after === undefined) throw new AppError('invalid_cursor');
  }
  return { after, limit: parsed.limit ?? DEFAULT_PAGE_SIZE };
}

export function createManagementApp(deps: ManagementDeps): express.Express {
  const sealingKey = deps.encryptionKeys[0];
  if (!sealingKey) throw new Error('createManagementApp: encryptionKeys needs at least the current key');
  const { keys, plans, logger } = deps;

  /** A lost message is covered by the key caches' entry lifetime, so the change itself stands. */
  async function announce(keyId: string): Promise<void> {
    try {
      await deps.keyEvents.publish({ kind: 'key', keyId });
    } catch (err) {
      logger.warn(
        { keyId, err: (err as Error).message },
        'key change not broadcast; caches expire it instead',
      );
    }
  }

  async function rateLimitsOf(key: KeyRow): Promise<KeyDetailResponse['usage']['rateLimits']> {
    const plan = key.rateLimitId === null ? undefined : await plans.get(key.rateLimitId);
    const policy: RateLimitPolicy | undefined = plan
      ? { limit: plan.limit, period: plan.period }
      : deps.defaultRateLimit;
    if (!policy) return null;
    let state;
    try {
      state = await deps.limiter.peek(key.id, policy, deps.clock());
    } catch (err) {
      logger.warn({ keyId: key.id, err: (err as Error).message }, 'rate limit state unavailable');
      throw new AppError('limit_unavailable');
    }
    return { limit: state.limit, remaining: state.remaining, resetTime: isoTimestamp(state.resetMs) };
  }

  // Exact paths, as src/server.ts routes them: case-sensitive, no trailing slash.
  const router = express.Router({ caseSensitive: true, strict: true });

  router
    .route(PATHS.createKey)
    .post(jsonBody, async (req, res) => {
      const { name } = validateCreateKey(req.body);
      const id = generateKeyId();
      const secret = generateSecret();
      const createdAt = new Date(deps.clock());
      await keys.insert({
        id,
        name,
        secretHash: hashSecret(secret),
        secretCiphertext: encryptSecret(secret, sealingKey),
        createdAt,
      });
      const body: CreateKeyResponse = { id, name, secret, createdAt: createTimestamp(createdAt) };
      res.status(201).location(`${deps.prefix}${PATHS.keys}/${id}`).json(body);
    })
    .all(methodNotAllowed('POST'));

  router
    .route(PATHS.keys)
    .get(async (req, res) => {
      const { after, limit } = parseListQuery(req.query);
      // One row more than asked says whether another page exists without a count query.
      const rows = await keys.list(after, limit + 1);
      const page = rows.slice(0, limit);
      const body: ListKeysResponse = {
        apiKeys: page.map((k) => ({
          consumerApiKeyId: k.id,
          name: k.name,
          createdAt: isoTimestamp(k.createdAt),
          lastUpdated: isoTimestamp(k.lastUpdated),
        })),
      };
      const last = page.at(-1);
      if (rows.length > limit && last) body.nextCursor = encodeCursor({ at: last.createdAt.getTime(), id: last.id });
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD'));

  router
    .route(PATHS.key)
    .get(async (req, res) => {
      const id = req.params.consumerApiKeyId;
      const key = canBeKeyId(id) ? await keys.get(id) : undefined;
      if (!key) throw new AppError('key_not_found');
      const [totals, rateLimits] = await Promise.all([deps.usage.read(key.id), rateLimitsOf(key)]);
      const body: KeyDetailResponse = {
        consumerApiKeyId: key.id,
        name: key.name,
        secret: decryptSecret(key.secretCiphertext, deps.encryptionKeys),
        createdAt: isoTimestamp(key.createdAt),
        lastUpdated: isoTimestamp(key.lastUpdated),
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
    .delete(async (req, res) => {
      const id = req.params.consumerApiKeyId;
      if (!canBeKeyId(id) || !(await keys.delete(id))) throw new AppError('key_not_found');
      await announce(id);
      const body: DeleteKeyResponse = {
        consumerApiKeyId: id,
        message: `Consumer API key ${id} has been deleted`,
      };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD, DELETE'));

  router
    .route(PATHS.createPlan)
    .post(jsonBody, async (req, res) => {
      const { rateLimitId, description = '', limit, period } = validateCreatePlan(req.body);
      const createdAt = new Date(deps.clock());
      if (!(await plans.insert({ rateLimitId, description, limit, period, createdAt }))) {
        throw new AppError('rate_limit_exists', `A rate limit plan with id "${rateLimitId}" already exists`);
      }
      const body: CreatePlanResponse = {
        rateLimitId,
        description,
        limit,
        period,
        createdAt: isoTimestamp(createdAt),
      };
      res.status(201).json(body);
    })
    .all(methodNotAllowed('POST'));

  router
    .route(PATHS.applyPlan)
    .post(jsonBody, async (req, res) => {
      const { consumerApiKeyId, rateLimitId } = validateApplyPlan(req.body);
      if (!(await plans.get(rateLimitId))) throw new AppError('rate_limit_not_found');
      if (!(await keys.bindPlan(consumerApiKeyId, rateLimitId, new Date(deps.clock())))) {
        throw new AppError('key_not_found');
      }
      await announce(consumerApiKeyId);
      const body: ApplyPlanResponse = {
        consumerApiKeyId,
        rateLimitId,
        message: `Rate limit plan ${rateLimitId} applied to consumer API key ${consumerApiKeyId}`,
      };
      res.json(body);
    })
    .all(methodNotAllowed('POST'));

  const toAppError = (err: unknown, method: string, path: string): AppError => {
    if (err instanceof AppError) return err;
    // The router could not percent-decode the id in the path: no key can have that id.
    if (err instanceof URIError) return new AppError('key_not_found');
    if (isDatabaseUnavailable(err)) {
      logger.warn({ err: (err as Error).message, method, path }, 'database unavailable');
      return new AppError('database_unavailable');
    }
    if (isStorageRefusingWrites(err)) {
      logger.warn({ err: (err as Error).message, method, path }, 'database refuses writes');
      deps.storageHealth?.refused((err as Error).message);
      return new AppError('storage_unavailable');
    }
    logger.error({ err, method, path }, 'management request failed');
    return new AppError('internal_error');
  };

  const sendError: ErrorRequestHandler = (err, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const error = toAppError(err, req.method, req.path);
    const retryAfter = retryAfterOf(error.code);
    if (retryAfter !== undefined) res.set('Retry-After', String(retryAfter));
    res.status(error.status).json(error.toBody());
  };

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.use(countAndNoStore(deps.metrics));
  app.use(requireRootToken(deps.rootToken));
  app.use(deps.prefix === '' ? '/' : deps.prefix, router);
  app.use((_req, _res, next) => next(new AppError('not_found')));
  app.use(sendError);
  return app;
}
