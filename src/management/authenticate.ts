/**
 * Who is calling: the root token (every scope) or an admin token (its own scopes), and refusals for
 * everyone else. Wrong credentials are counted per client address, and a credential is checked only
 * with the throttle's leave; past the budget an address gets 429 for every credential, the right one
 * included, so a guess that hits cannot be told from a miss.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { AppError } from '../errors.js';
import { hashSecret } from '../keys/secret.js';
import { UNCOUNTED, type Attempt, type FailureThrottle } from '../proxy/auth-throttle.js';
import { secondsUntil } from '../plans/window.js';
import type { TrustProxy } from '../config.js';
import { forwardedFacts, requestIdOf } from '../proxy/forwarding-headers.js';
import type { AdminTokenRepository, AdminTokenRow } from '../store/admin-token-repository.js';
import type { Actor } from '../store/audit-repository.js';
import { SCOPES, type Scope } from './scopes.js';

/** The caller of one management request, kept in `res.locals.caller`. */
export interface Caller {
  readonly actor: Actor;
  readonly scopes: ReadonlySet<Scope>;
  /** When the caller's token stops working; null: never (the root token, or a token without expiry). */
  readonly expiresAt: Date | null;
  readonly requestId: string;
  readonly clientAddress: string;
}

const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES);

/** Admin tokens are recognisable in configs and secret scanners; 32 random bytes follow. */
const ADMIN_TOKEN = /^tga_[A-Za-z0-9_-]{43}$/;

export function generateAdminToken(): string {
  return 'tga_' + randomBytes(32).toString('base64url');
}

export function callerOf(res: Response): Caller {
  return res.locals.caller as Caller;
}

export interface AuthenticateOptions {
  readonly rootToken: string;
  readonly tokens: Pick<AdminTokenRepository, 'findByHash'>;
  readonly throttle: FailureThrottle;
  readonly trustProxy: TrustProxy;
  readonly clock: () => number;
}

/** Admin tokens a replica remembers having seen valid (hashes, oldest forgotten first). */
const MAX_VOUCHED_TOKENS = 1_000;

/** A caller refused: the error, and the headers that go with it (a challenge, a Retry-After). */
export interface Refusal {
  readonly error: AppError;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Who is calling, from a request's headers and address (framework-free: the Express middleware below
 * and verify's own route both use it): the caller, or the refusal to answer. Throws when the database
 * could not say whether an admin token exists.
 */
export type IdentifyCaller = (req: IncomingMessage, requestId: string) => Promise<Caller | Refusal>;

export function callerIdentifier(options: AuthenticateOptions): IdentifyCaller {
  const refuse = (presented: boolean, message: string): Refusal => ({
    error: new AppError('unauthorized', message),
    // RFC 6750 §3, as the OpenAPI document writes it (no realm, which is optional): name the scheme, and say
    // "invalid_token" only when a token was actually presented.
    headers: { 'WWW-Authenticate': presented ? 'Bearer error="invalid_token"' : 'Bearer' },
  });
  // Compared by their hashes: in constant time whatever the lengths. The root token's is taken once.
  const rootHash = hashSecret(options.rootToken);
  /**
   * Hashes of admin tokens seen valid on this replica. 256 random bits are never a guess, so such a
   * token is checked without reserving a guess from the shared budget (no Redis round trip), though
   * a throttled address is still refused. A vouched token deleted since is refused once uncounted
   * and then forgotten.
   */
  const vouched = new Set<string>();
  return async (req, requestId) => {
    const clientAddress = forwardedFacts(req, options.trustProxy).client;
    const match = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
    if (!match) return refuse(false, 'Authorization: Bearer <ROOT_TOKEN or admin token> is required');
    const now = options.clock();
    const presented = match[1]!;
    const presentedHash = hashSecret(presented);
    const hashText = ADMIN_TOKEN.test(presented) ? presentedHash.toString('hex') : undefined;
    let attempt: Attempt;
    if (hashText !== undefined && vouched.has(hashText)) {
      const blockedUntil = options.throttle.blockedUntil(clientAddress, now);
      attempt = blockedUntil === undefined ? UNCOUNTED : { allowed: false, retryAtMs: blockedUntil };
    } else {
      attempt = await options.throttle.attempt(clientAddress, now, presented);
    }
    if (!attempt.allowed) {
      return {
        error: new AppError('too_many_failed_attempts'),
        headers: { 'Retry-After': String(secondsUntil(attempt.retryAtMs, now)) },
      };
    }
    const caller = (actor: Actor, scopes: ReadonlySet<Scope>, expiresAt: Date | null): Caller => ({
      actor,
      scopes,
      expiresAt,
      requestId,
      clientAddress,
    });
    if (timingSafeEqual(presentedHash, rootHash)) {
      attempt.settle(false);
      return caller({ type: 'root' }, ALL_SCOPES, null);
    }
    let token: AdminTokenRow | undefined;
    try {
      token = hashText === undefined ? undefined : await options.tokens.findByHash(presentedHash);
    } catch (err) {
      attempt.settle(false);
      throw err;
    }
    const valid = token !== undefined && (token.expiresAt === null || token.expiresAt.getTime() > now);
    attempt.settle(!valid);
    if (token !== undefined && valid) {
      if (!vouched.has(hashText!) && vouched.size >= MAX_VOUCHED_TOKENS)
        vouched.delete(vouched.values().next().value as string);
      vouched.add(hashText!);
      return caller(
        { type: 'token', id: token.id, name: token.name },
        new Set(token.scopes as Scope[]),
        token.expiresAt,
      );
    }
    if (hashText !== undefined) vouched.delete(hashText);
    return refuse(true, 'The token is not valid');
  };
}

export const isRefusal = (found: Caller | Refusal): found is Refusal => 'error' in found;

/** The caller, in `res.locals.caller` for the routes; a refusal goes to the error handler with its headers. */
export function authenticate(options: AuthenticateOptions): RequestHandler {
  const identify = callerIdentifier(options);
  return async (req, res, next) => {
    const requestId = requestIdOf(req.headers);
    res.set('x-request-id', requestId);
    let found: Caller | Refusal;
    try {
      found = await identify(req, requestId);
    } catch (err) {
      next(err);
      return;
    }
    if (isRefusal(found)) {
      res.set(found.headers);
      next(found.error);
      return;
    }
    res.locals.caller = found;
    next();
  };
}

/** The RFC 6750 challenge of a 403 insufficient_scope, naming the scope that is missing. */
export const scopeChallenge = (scope: Scope): string => `Bearer error="insufficient_scope", scope="${scope}"`;

/** 403 insufficient_scope, with the RFC 6750 challenge naming the scope that is missing. */
export function insufficientScope(
  res: Response,
  scope: Scope,
  message = `This call needs the scope ${scope}`,
): AppError {
  res.set('WWW-Authenticate', scopeChallenge(scope));
  return new AppError('insufficient_scope', message);
}

/** Lets the request through only when its caller holds `scope`: else 403 insufficient_scope. */
export function requires(scope: Scope): RequestHandler {
  return (_req, res, next) => {
    next(callerOf(res).scopes.has(scope) ? undefined : insufficientScope(res, scope));
  };
}
