/**
 * An Express app that answers as the management API does: exact paths, no framework headers or ETags,
 * and every failure as the contract's JSON error (with Retry-After where its code has one). The
 * management API and the portal are both built on it.
 */
import express, { type ErrorRequestHandler } from 'express';
import { retryAfterOf } from '../errors.js';
import { appErrorOf } from './app-error-of.js';
import type { ManagementDeps } from './context.js';

export function strictApp(): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  return app;
}

export function sendAppError(deps: Pick<ManagementDeps, 'logger' | 'storageHealth'>): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const error = appErrorOf(err, deps, req.method, req.path);
    const retryAfter = retryAfterOf(error.code);
    if (retryAfter !== undefined) res.set('Retry-After', String(retryAfter));
    res.status(error.status).json(error.toBody());
  };
}
