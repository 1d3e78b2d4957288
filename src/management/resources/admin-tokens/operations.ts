/** Admin tokens: scoped credentials for scripts, CI and support tools (docs/guides/admin-tokens-and-audit.md). */
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { Response } from 'express';
import { AppError } from '../../../errors.js';
import { hashSecret } from '../../../keys/secret.js';
import type { AdminTokenRow } from '../../../store/admin-token-repository.js';
import { tokenAudit } from '../../audit-views.js';
import { callerOf, generateAdminToken, insufficientScope, type Caller } from '../../authenticate.js';
import { defineOperation } from '../../operation.js';
import {
  AdminTokenId,
  CreateAdminTokenRequest,
  CreateAdminTokenResponse,
  DeleteAdminTokenResponse,
  ListAdminTokensResponse,
  type AdminTokenResponse,
} from './schemas.js';
import type { Scope } from '../../scopes.js';
import { isoTimestamp } from '../../time-format.js';
import { keySettingProblems, parseTimestamp } from '../../validation.js';

const TAG = 'Admin tokens and audit';
const TOKENS_PATH = '/tollgate/admin-tokens';

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
 * What a caller may hand out (a token grants only scopes it holds itself): a
 * token whose scopes it holds all of, expiring in the future and no later than itself.
 */
function checkGrant(
  res: Response,
  caller: Caller,
  scopes: readonly Scope[],
  expiresAt: Date | null,
  now: Date,
): void {
  if (expiresAt !== null && expiresAt.getTime() <= now.getTime()) {
    throw new AppError('validation_failed', 'The request is not valid: expiresAt must be in the future', [
      { field: 'expiresAt', message: 'must be in the future' },
    ]);
  }
  const beyond = scopes.find((scope) => !caller.scopes.has(scope));
  if (beyond !== undefined)
    throw insufficientScope(res, beyond, `A token can grant only scopes it holds; this one lacks ${beyond}`);
  if (caller.expiresAt !== null && (expiresAt === null || expiresAt > caller.expiresAt)) {
    throw new AppError(
      'token_outlives_caller',
      `A token can create only tokens that expire no later than itself: set expiresAt to ${isoTimestamp(caller.expiresAt)} or earlier`,
    );
  }
}

export const adminTokenOperations = [
  defineOperation({
    id: 'createAdminToken',
    method: 'post',
    path: TOKENS_PATH,
    scope: 'tokens:write',
    tag: TAG,
    summary: 'Create an admin token with some scopes',
    description:
      'The token (`secret`) is shown in this answer only and stored as a hash. A token hands out no more than it holds: only scopes it holds all of (403 `insufficient_scope` naming the first it lacks) and, when it expires itself, only tokens that expire no later than it does (403 `token_outlives_caller`; an absent or null `expiresAt` means never). `expiresAt` must be in the future (400 `validation_failed`).',
    body: { schema: CreateAdminTokenRequest, check: keySettingProblems },
    success: { status: 201, description: 'Created', schema: CreateAdminTokenResponse },
    errors: { token_outlives_caller: 'The token would outlive the caller' },
    async handle({ body: input, res, ctx }) {
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
        return {
          result: undefined,
          action: 'admin_token.create',
          target: { type: 'admin_token', id: token.id },
          before: null,
          after: tokenAudit(token),
        };
      });
      const body: CreateAdminTokenResponse = { ...tokenView(token), secret };
      res.status(201).json(body);
    },
  }),

  defineOperation({
    id: 'listAdminTokens',
    method: 'get',
    path: TOKENS_PATH,
    scope: 'tokens:write',
    tag: TAG,
    summary: 'List admin tokens (never their secrets)',
    success: { status: 200, description: 'Every admin token, oldest first', schema: ListAdminTokensResponse },
    async handle({ res, ctx }) {
      const body: ListAdminTokensResponse = { adminTokens: (await ctx.tokens.list()).map(tokenView) };
      res.json(body);
    },
  }),

  defineOperation({
    id: 'deleteAdminToken',
    method: 'delete',
    path: `${TOKENS_PATH}/:tokenId`,
    scope: 'tokens:write',
    tag: TAG,
    summary: 'Delete an admin token: refused at once on this replica, within 1 s on every other',
    description:
      'A token may delete only tokens whose scopes it holds all of: a narrower token cannot revoke a broader one (403 `insufficient_scope`).',
    params: {
      schema: Type.Object({ tokenId: { ...AdminTokenId, description: 'The admin token id (`id`)' } }),
      notFound: 'admin_token_not_found',
    },
    success: { status: 200, description: 'Deleted', schema: DeleteAdminTokenResponse },
    errors: { admin_token_not_found: 'No admin token has that id' },
    async handle({ params: { tokenId: id }, res, ctx }) {
      const caller = callerOf(res);
      await ctx.audited(res, async ({ tokens }) => {
        const before = await tokens.delete(id);
        if (!before) throw new AppError('admin_token_not_found');
        // A token may remove only what it could have created: a narrower token cannot revoke a broader
        // one (the refusal rolls the deletion back).
        const beyond = before.scopes.find((scope) => !caller.scopes.has(scope as Scope));
        if (beyond !== undefined)
          throw insufficientScope(
            res,
            beyond as Scope,
            `A token can delete only tokens whose scopes it holds; this one lacks ${beyond}`,
          );
        return {
          result: undefined,
          action: 'admin_token.delete',
          target: { type: 'admin_token', id },
          before: tokenAudit(before),
          after: null,
        };
      });
      // Refused here at once; every other replica reads the token again within ADMIN_TOKEN_RECHECK_MS.
      ctx.tokenLookup.forget(id);
      const body: DeleteAdminTokenResponse = { id, message: `Admin token ${id} has been deleted` };
      res.json(body);
    },
  }),
];
