/**
 * The management API: keys, plans and bindings behind the root token. Built from its dependencies and
 * never listening itself, so the server mounts it and tests run it in process. The routes live in one
 * file per resource; this file is what they share: authentication, errors and the announcements.
 */
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { AppError, retryAfterOf } from '../errors.js';
import type { KeyChange } from '../keys/key-events.js';
import { constantTimeEqual } from '../keys/secret.js';
import type { Metrics } from '../ops/metrics.js';
import type { ManagementContext, ManagementDeps } from './context.js';
import { isDatabaseUnavailable, isForeignKeyViolation, isStorageRefusingWrites } from './db-errors.js';
import { addKeyRoutes } from './key-routes.js';
import { addPlanRoutes } from './plan-routes.js';

export type { ManagementDeps, UsageTotalsReader } from './context.js';
export type { UsageTotals } from './schemas.js';

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

export function createManagementApp(deps: ManagementDeps): express.Express {
  const sealingKey = deps.encryptionKeys[0];
  if (!sealingKey) throw new Error('createManagementApp: encryptionKeys needs at least the current key');
  const { logger } = deps;
  const ctx: ManagementContext = {
    ...deps,
    sealingKey,
    now: () => new Date(deps.clock()),
    async announce(change: KeyChange) {
      try {
        await deps.keyEvents.publish(change);
      } catch (err) {
        logger.warn({ change, err: (err as Error).message }, 'change not broadcast; key caches expire it instead');
      }
    },
  };

  // Exact paths, as src/server.ts routes them: case-sensitive, no trailing slash.
  const router = express.Router({ caseSensitive: true, strict: true });
  addKeyRoutes(router, ctx);
  addPlanRoutes(router, ctx);

  const toAppError = (err: unknown, method: string, path: string): AppError => {
    if (err instanceof AppError) return err;
    // The router could not percent-decode the id in the path: no key can have that id.
    if (err instanceof URIError) return new AppError('key_not_found');
    // The only foreign key a management write can break: a plan deleted while it was being bound.
    if (isForeignKeyViolation(err)) return new AppError('rate_limit_not_found');
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
