/** Admin tokens: scoped credentials for scripts, CI and support tools (contract section 9). */
import type { Router } from 'express';
import { AppError } from '../errors.js';
import { hashSecret } from '../keys/secret.js';
import type { AdminTokenRow } from '../store/admin-token-repository.js';
import { tokenAudit } from './audit-views.js';
import { callerOf, generateAdminToken, requires } from './authenticate.js';
import type { ManagementContext } from './context.js';
import { jsonBody } from './json-body.js';
import { methodNotAllowed } from './route-helpers.js';
import { PATHS, REQUIRED_SCOPES } from './routes.js';
import type { AdminTokenResponse, CreateAdminTokenResponse, DeleteAdminTokenResponse, ListAdminTokensResponse } from './schemas.js';
import type { Scope } from './scopes.js';
import { isoTimestamp } from './time-format.js';
import { parseTimestamp, validateCreateAdminToken } from './validation.js';
import { randomBytes } from 'node:crypto';

function tokenView(token: AdminTokenRow): AdminTokenResponse {
  return {
    id: token.id,
    name: token.name,
    scopes: token.scopes as Scope[],
    expiresAt: token.expiresAt === null ? null : isoTimestamp(token.expiresAt),
    createdAt: isoTimestamp(token.createdAt),
  };
}

export function addAdminTokenRoutes(router: Router, ctx: ManagementContext): void {
  router
    .route(PATHS.adminTokens)
    .post(requires(REQUIRED_SCOPES.adminTokens.post), jsonBody, async (req, res) => {
      const input = validateCreateAdminToken(req.body);
      // A token can hand out only what it holds itself.
      const caller = callerOf(res);
      const beyond = input.scopes.find((scope) => !caller.scopes.has(scope));
      if (beyond !== undefined) {
        res.set('WWW-Authenticate', `Bearer realm="tollgate", error="insufficient_scope", scope="${beyond}"`);
        throw new AppError('insufficient_scope', `A token can grant only scopes it holds; this one lacks ${beyond}`);
      }
      const secret = generateAdminToken();
      const token: AdminTokenRow = {
        id: 'tok_' + randomBytes(16).toString('base64url'),
        name: input.name,
        scopes: input.scopes,
        expiresAt: input.expiresAt ? parseTimestamp(input.expiresAt)! : null,
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
      await ctx.audited(res, async ({ tokens }) => {
        const before = await tokens.delete(id);
        if (!before) throw new AppError('not_found', 'No admin token has that id');
        return { result: undefined, action: 'admin_token.delete', target: { type: 'admin_token', id }, before: tokenAudit(before), after: null };
      });
      // Every replica reads tokens from the database on each management call: refused everywhere now.
      const body: DeleteAdminTokenResponse = { id, message: `Admin token ${id} has been deleted` };
      res.json(body);
    })
    .all(methodNotAllowed('DELETE'));
}
