/**
 * The portal's server side on the public listener (src/portal/README.md): sign-in and the portal's own
 * API, an Express app of its own behind the session cookie (never the management API's bearer token,
 * and the management API never reads the cookie); the portal's pages, when given, answer the rest.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type RequestHandler } from 'express';
import { AppError } from '../errors.js';
import { sendAppError, strictApp } from '../management/express-app.js';
import type { ManagementContext } from '../management/context.js';
import { registerOperations } from '../management/register-operations.js';
import { portalPaths } from '../management/resources/developer-portal/portal-origin.js';
import type { FailureThrottle } from '../proxy/auth-throttle.js';
import { brandingOf } from './api/branding.js';
import { failurePages } from './html-page.js';
import type { PageAssets } from './pages/portal-pages.js';
import { portalApiOperations } from './api/operations.js';
import { refuseCrossSiteWrites, requireSession } from './portal-session.js';
import { oidcSignIn } from './oidc.js';
import { signInWithLink } from './sign-in.js';

/** Answers (and returns true for) the paths it serves; false: not a portal path it knows. */
export type PortalHandler = (req: IncomingMessage, res: ServerResponse, path: string) => boolean;

export interface PortalOptions {
  readonly ctx: ManagementContext;
  /** Failed sign-in codes per client address (shared through Redis across replicas). */
  readonly signInThrottle: FailureThrottle;
  /** The portal's pages (src/portal/pages/): every other path under /tollgate/portal/. */
  readonly pages?: PortalHandler;
  /** Their built stylesheet and icon, which the pages of a failed sign-in link too. */
  readonly pageAssets?: PageAssets;
}

/** The portal answers nothing, as if it did not exist, while it is off. */
function onlyWhenEnabled(ctx: ManagementContext): RequestHandler {
  return async (_req, _res, next) => {
    try {
      next((await ctx.portal.get()).settings.enabled ? undefined : new AppError('not_found'));
    } catch (err) {
      next(err);
    }
  };
}

export function createPortalHandler({
  ctx,
  signInThrottle,
  pages,
  pageAssets,
}: PortalOptions): PortalHandler {
  const paths = portalPaths(ctx.prefix);
  const sendFailurePage = failurePages(ctx, pageAssets);
  const api = express.Router({ caseSensitive: true, strict: true });
  api.get('/branding', async (_req, res, next) => {
    try {
      res.json(brandingOf(await ctx.portal.get(), ctx.prefix));
    } catch (err) {
      next(err);
    }
  });
  api.use(requireSession(ctx), refuseCrossSiteWrites(ctx));
  registerOperations(api, portalApiOperations, ctx);

  const app = strictApp();
  app.use((_req, res, next) => {
    // Answers carry secrets (a new key's) and a session's CSRF token: no cache may keep them.
    res.set('Cache-Control', 'no-store');
    next();
  });
  app.use(paths.root, onlyWhenEnabled(ctx));
  app.get(paths.signIn, signInWithLink(ctx, signInThrottle, sendFailurePage));
  app.use(paths.oidcStart, oidcSignIn(ctx, sendFailurePage));
  app.use(paths.api, api);
  app.use((_req, _res, next) => next(new AppError('not_found')));
  app.use(sendAppError(ctx));

  const apiPrefix = `${paths.api}/`;
  const signInPrefix = `${paths.signIn}/`;
  return (req, res, path) => {
    if (path === paths.signIn || path.startsWith(signInPrefix) || path.startsWith(apiPrefix)) {
      app(req, res);
      return true;
    }
    return pages?.(req, res, path) ?? false;
  };
}
