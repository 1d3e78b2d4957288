/** Admin tokens: scoped credentials for scripts, CI and support tools (contract section 9). */
import type { Response, Router } from 'express';
import { AppError } from '../errors.js';
import { hashSecret } from '../keys/secret.js';
import type { AdminTokenRow } from '../store/admin-token-repository.js';
import { tokenAudit } from './audit-views.js';
import { callerOf, generateAdminToken, insufficientScope, requires, type Caller } from './authenticate.js';
import type { ManagementContext } from './context.js';
import { jsonBody } from './json-body.js';
import { methodNotAllowed } from './route-helpers.js';
import { PATHS, REQUIRED_SCOPES } from './routes.js';
import type { AdminTokenResponse, CreateAdminTokenResponse, DeleteAdminTokenResponse, ListAdminTokensResponse } from './schemas.js';
import type { Scope } from './scopes.js';
import { isoTimestamp } from './time-format.js';
import { parseTimestamp, validateCreateAdminToken } from './validation.js';
import { randomBytes } from 'node:crypto';

/** `tok_` and 16 random bytes, base64url. */
const TOKEN_ID = /^tok_[A-Za-z0-9_-]{22}$/;

function tokenView(token: AdminTokenRow): AdminTokenResponse {
  return {
    id: token.id,
    name: token.name,
    scopes: token.scopes as Scope[],
    expiresAt: token.expiresAt === null ? null : isoTimestamp(token.expiresAt),
    createdAt: isoTimestamp(token.createdAt),
  };
}

/**
 * What a caller may hand out (contract section 9: "a token grants only scopes it holds itself"): a
 * token whose scopes it holds all of, expiring in the future and no later than itself.
 */
function checkGrant(res: Response, caller: Caller, scopes: readonly Scope[], expiresAt: Date | null, now: Date): void {
  if (expiresAt !== null && expiresAt.getTime() <= now.getTime()) {
    throw new AppError('validation_failed', 'The request is not valid: expiresAt must be in the future', [{ field: 'expiresAt', message: 'must be in the future' }]);
  }
  const beyond = scopes.find((scope) => !caller.scopes.has(scope));
  if (beyond !== undefined) throw insufficientScope(res, beyond, `A token can grant only scopes it holds; this one lacks ${beyond}`);
  if (caller.expiresAt !== null && (expiresAt === null || expiresAt > caller.expiresAt)) {
    throw new AppError(
      'token_outlives_caller',
      `A token can create only tokens that expire no later than itself: set expiresAt to ${isoTimestamp(caller.expiresAt)} or earlier`,
    );
  }
}

export function addAdminTokenRoutes(router: Router, ctx: ManagementContext): void {
  router
    .route(PATHS.adminTokens)
    .post(requires(REQUIRED_SCOPES.adminTokens.post), jsonBody, async (req, res) => {
      const input = validateCreateAdminToken(req.body);
      const expiresAt = input.expiresAt ? parseTimestamp(input.expiresAt)! : null;
      checkGrant(res, callerOf(res), input.scopes, expiresAt, ctx.now());
      const secret = generateAdminToken();
      const token: AdminTokenRow = {
        id: 'tok_' + randomBytes(16).toString('base64url'),
        name: input.name,
        scopes: input.scopes,
        expiresAt,
        createdAt: ctx.now(),
      };
      await ctx.audited(res, async ({ tokens }) => {
        await tokens.insert({ ...token, tokenHash: hashSecret(secret) });
        return { result: undefined, action: 'admin_token.create', target: { type: 'admin_token', id: token.id }, before: null, after: tokenAudit(token) };
      });
      const body: CreateAdminTokenResponse = { ...tokenView(token), secret };
      res.status(201).json(body);
    })
    .get(requires(REQUIRED_SCOPES.adminTokens.get), async (_req, res) => {
      const body: ListAdminTokensResponse = { adminTokens: (await ctx.tokens.list()).map(tokenView) };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD, POST'));

  router
    .route(PATHS.adminToken)
    .delete(requires(REQUIRED_SCOPES.adminToken.delete), async (req, res) => {
      const id = req.params.tokenId;
      // A path id that cannot name a token is answered without a query.
      if (!TOKEN_ID.test(id)) throw new AppError('admin_token_not_found');
      const caller = callerOf(res);
      await ctx.audited(res, async ({ tokens }) => {
        const before = await tokens.delete(id);
        if (!before) throw new AppError('admin_token_not_found');
        // A token may remove only what it could have created: a narrower token cannot revoke a broader
        // one (the refusal rolls the deletion back).
        const beyond = before.scopes.find((scope) => !caller.scopes.has(scope as Scope));
        if (beyond !== undefined) throw insufficientScope(res, beyond as Scope, `A token can delete only tokens whose scopes it holds; this one lacks ${beyond}`);
        return { result: undefined, action: 'admin_token.delete', target: { type: 'admin_token', id }, before: tokenAudit(before), after: null };
      });
      // Every replica reads tokens from the database on each management call: refused everywhere now.
      const body: DeleteAdminTokenResponse = { id, message: `Admin token ${id} has been deleted` };
      res.json(body);
    })
    .all(methodNotAllowed('DELETE'));
}
