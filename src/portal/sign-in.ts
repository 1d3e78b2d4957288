/**
 * Signing in with a link (POST /tollgate/portal/sessions): the link's code is exchanged, once, for the
 * session cookie, and the browser is sent on to the portal at once, so the code leaves the address bar
 * (and never reaches a page's script, history entry of the portal, or Referer). Failed exchanges count
 * per canonical client address like wrong management credentials: past 20 a minute, 429.
 */
import type { RequestHandler } from 'express';
import { hashSecret } from '../keys/secret.js';
import type { ManagementContext } from '../management/context.js';
import { overHttps, portalPaths } from '../management/resources/developer-portal/portal-origin.js';
import { secondsUntil } from '../plans/window.js';
import type { FailureThrottle } from '../proxy/auth-throttle.js';
import { forwardedFacts } from '../proxy/forwarding-headers.js';
import type { PortalSessionRow } from '../store/portal-session-repository.js';
import type { Response } from 'express';
import type { SendFailurePage } from './html-page.js';
import { generateSessionToken, SESSION_COOKIE, setPortalCookie } from './session-cookie.js';

const CODE = /^[A-Za-z0-9_-]{43}$/;

/** Sets the cookie of a session just signed in and sends the browser to the portal's first page. */
export function enterPortal(
  res: Response,
  ctx: ManagementContext,
  session: PortalSessionRow,
  token: string,
): void {
  const secure = overHttps(res.req, ctx.trustProxy);
  const maxAge = Math.max(0, Math.ceil((session.expiresAt.getTime() - ctx.clock()) / 1000));
  setPortalCookie(res, SESSION_COOKIE, token, maxAge, { prefix: ctx.prefix, secure });
  res.set('Referrer-Policy', 'no-referrer').redirect(303, portalPaths(ctx.prefix).home);
}

export function signInWithLink(
  ctx: ManagementContext,
  throttle: FailureThrottle,
  sendFailurePage: SendFailurePage,
): RequestHandler {
  return async (req, res, next) => {
    try {
      const code = typeof req.query.code === 'string' ? req.query.code : '';
      const address = forwardedFacts(req, ctx.trustProxy).client;
      const now = ctx.clock();
      const attempt = await throttle.attempt(address, now, code);
      if (!attempt.allowed) {
        await sendFailurePage(res, 'too_many_attempts', {
          'Retry-After': String(secondsUntil(attempt.retryAtMs, now)),
        });
        return;
      }
      const token = generateSessionToken();
      let session: PortalSessionRow | undefined;
      try {
        session = CODE.test(code)
          ? await ctx.portalSessions.signIn(hashSecret(code), hashSecret(token), ctx.now())
          : undefined;
      } catch (err) {
        // The database did not answer: not a wrong code.
        attempt.settle(false);
        throw err;
      }
      attempt.settle(session === undefined);
      if (!session) {
        await sendFailurePage(res, 'link_not_working');
        return;
      }
      enterPortal(res, ctx, session, token);
    } catch (err) {
      next(err);
    }
  };
}
