/**
 * Who is calling: the root token (every scope) or an admin token (its own scopes), and refusals for
 * everyone else. Wrong credentials are counted per client address; past the budget an address gets
 * 429 for every credential, the right one included, so a guess that hits cannot be told from a miss.
 */
import { randomBytes } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { AppError } from '../errors.js';
import { constantTimeEqual, hashSecret } from '../keys/secret.js';
import type { FailureThrottle } from '../proxy/auth-throttle.js';
import type { TrustProxy } from '../config.js';
import { forwardedFacts, requestIdOf } from '../proxy/forwarding-headers.js';
import type { AdminTokenRepository } from '../store/admin-token-repository.js';
import type { Actor } from '../store/audit-repository.js';
import { SCOPES, type Scope } from './scopes.js';

/** The caller of one management request, kept in `res.locals.caller`. */
export interface Caller {
  readonly actor: Actor;
  readonly scopes: ReadonlySet<Scope>;
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

export function authenticate(options: AuthenticateOptions): RequestHandler {
  const refuse = (res: Response, presented: boolean, message: string): AppError => {
    // RFC 6750 §3: name the scheme; say "invalid_token" only when a token was actually presented.
    res.set('WWW-Authenticate', presented ? 'Bearer realm="tollgate", error="invalid_token"' : 'Bearer realm="tollgate"');
    return new AppError('unauthorized', message);
  };
  return async (req, res, next) => {
    const requestId = requestIdOf(req.headers);
    res.set('x-request-id', requestId);
    const clientAddress = forwardedFacts(req, options.trustProxy).client;
    const match = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
    if (!match) {
      next(refuse(res, false, 'Authorization: Bearer <ROOT_TOKEN or admin token> is required'));
      return;
    }
    const now = options.clock();
    const blockedUntil = options.throttle.blockedUntil(clientAddress, now);
    if (blockedUntil !== undefined) {
      res.set('Retry-After', String(Math.max(1, Math.ceil((blockedUntil - now) / 1000))));
      next(new AppError('too_many_failed_attempts'));
      return;
    }
    const presented = match[1]!;
    const caller = (actor: Actor, scopes: ReadonlySet<Scope>): Caller => ({ actor, scopes, requestId, clientAddress });
    if (constantTimeEqual(presented, options.rootToken)) {
      res.locals.caller = caller({ type: 'root' }, ALL_SCOPES);
      next();
      return;
    }
    try {
      const token = ADMIN_TOKEN.test(presented) ? await options.tokens.findByHash(hashSecret(presented)) : undefined;
      if (token !== undefined && (token.expiresAt === null || token.expiresAt.getTime() > now)) {
        res.locals.caller = caller({ type: 'token', id: token.id, name: token.name }, new Set(token.scopes as Scope[]));
        next();
        return;
      }
    } catch (err) {
      next(err);
      return;
    }
    options.throttle.fail(clientAddress, now);
    next(refuse(res, true, 'The token is not valid'));
  };
}

/** Lets the request through only when its caller holds `scope`: else 403 insufficient_scope. */
export function requires(scope: Scope): RequestHandler {
  return (_req, res, next) => {
    if (callerOf(res).scopes.has(scope)) {
      next();
      return;
    }
    res.set('WWW-Authenticate', `Bearer realm="tollgate", error="insufficient_scope", scope="${scope}"`);
    next(new AppError('insufficient_scope', `This call needs the scope ${scope}`));
  };
}
