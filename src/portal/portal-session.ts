/**
 * Who is calling the portal's API: the session of the request's cookie, read from the database at every
 * request (docs/decisions/0100), so a session ended anywhere is refused everywhere at once. The caller
 * of the management operations the portal reuses is the portal actor, acting for the session's consumer.
 */
import type { RequestHandler, Response } from 'express';
import { AppError } from '../errors.js';
import { hashSecret } from '../keys/secret.js';
import type { Caller } from '../management/authenticate.js';
import type { ManagementContext } from '../management/context.js';
import { portalOrigin } from '../management/resources/developer-portal/portal-origin.js';
import { forwardedFacts, requestIdOf } from '../proxy/forwarding-headers.js';
import type { PortalSessionRow } from '../store/portal-session-repository.js';
import { CSRF_HEADER, csrfMatches, sessionTokenOf } from './session-cookie.js';

export interface PortalCall {
  readonly session: PortalSessionRow;
  /** The raw token of the cookie (the CSRF token is derived from it). */
  readonly token: string;
}

export const portalCallOf = (res: Response): PortalCall => res.locals.portal as PortalCall;

/** The audit log's portal actor: the user's id, their email (or name), and their consumer. */
export function portalCaller(session: PortalSessionRow, requestId: string, clientAddress: string): Caller {
  const name = session.user.email ?? session.user.name;
  return {
    actor: {
      type: 'portal',
      id: session.user.id,
      ...(name !== undefined && { name }),
      consumerId: session.consumerId,
    },
    // The portal reaches the management operations only through its own routes, never by scope.
    scopes: new Set(),
    expiresAt: session.expiresAt,
    requestId,
    clientAddress,
  };
}

/** 401 not_signed_in unless the cookie names a live session (of a consumer that still exists). */
export function requireSession(ctx: ManagementContext): RequestHandler {
  return async (req, res, next) => {
    const requestId = requestIdOf(req.headers);
    res.set('x-request-id', requestId);
    const token = sessionTokenOf(req);
    try {
      const session = token && (await ctx.portalSessions.byToken(hashSecret(token), ctx.now()));
      if (!token || !session) throw new AppError('not_signed_in');
      res.locals.portal = { session, token } satisfies PortalCall;
      res.locals.caller = portalCaller(session, requestId, forwardedFacts(req, ctx.trustProxy).client);
      next();
    } catch (err) {
      next(err);
    }
  };
}

const READS = new Set(['GET', 'HEAD']);

/**
 * A write must come from the portal's own page: its `Origin` exactly the portal's (another port of the
 * same host is another origin) and the session's CSRF token in `x-tollgate-csrf`. Else 403
 * cross_site_request, before anything is read or changed.
 */
export function refuseCrossSiteWrites(ctx: ManagementContext): RequestHandler {
  return (req, res, next) => {
    if (READS.has(req.method)) {
      next();
      return;
    }
    const { token } = portalCallOf(res);
    const sameOrigin = req.headers.origin === portalOrigin(req, ctx.trustProxy);
    const csrf = req.headers[CSRF_HEADER];
    next(
      sameOrigin && csrfMatches(token, typeof csrf === 'string' ? csrf : undefined)
        ? undefined
        : new AppError('cross_site_request'),
    );
  };
}
