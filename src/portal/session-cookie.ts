/**
 * The portal session as the browser holds it: an HttpOnly, SameSite=Lax cookie scoped to the portal's
 * paths, holding a random token the database knows only by its hash; and the CSRF token bound to it,
 * which the page reads from GET …/api/me and sends back with every write.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';
import { portalPaths } from '../management/resources/developer-portal/portal-origin.js';

export const SESSION_COOKIE = 'tollgate_portal';
/** The header a portal page sets on every write. */
export const CSRF_HEADER = 'x-tollgate-csrf';
const TOKEN = /^tgp_[A-Za-z0-9_-]{43}$/;

export const generateSessionToken = (): string => 'tgp_' + randomBytes(32).toString('base64url');

/** A cookie's value from the request's Cookie header; undefined: not sent. */
export function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at !== -1 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** The session token the request carries, when it has the token's form. */
export function sessionTokenOf(req: IncomingMessage): string | undefined {
  const token = cookieOf(req, SESSION_COOKIE);
  return token !== undefined && TOKEN.test(token) ? token : undefined;
}

export interface CookieScope {
  readonly prefix: string;
  /** The request came over HTTPS (itself, or as a trusted proxy says). */
  readonly secure: boolean;
}

/** `Set-Cookie` for a cookie of the portal's paths; `maxAgeSeconds` 0 deletes it. */
export function setPortalCookie(
  res: Response,
  name: string,
  value: string,
  maxAgeSeconds: number,
  { prefix, secure }: CookieScope,
): void {
  const attributes = [
    `${name}=${value}`,
    `Path=${portalPaths(prefix).root}`,
    `Max-Age=${maxAgeSeconds}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(secure ? ['Secure'] : []),
  ];
  res.append('Set-Cookie', attributes.join('; '));
}

/** The CSRF token of a session: derived from its token, so it needs no storage and dies with it. */
export const csrfTokenOf = (sessionToken: string): string =>
  createHmac('sha256', sessionToken).update('tollgate-portal-csrf').digest('base64url');

export function csrfMatches(sessionToken: string, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const expected = Buffer.from(csrfTokenOf(sessionToken));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
