/**
 * The caller itself (docs/guides/console.md, Your access): which token is signed in and what it may do, so a console
 * or a script can show what it cannot do before trying. Any valid token may ask; it needs no scope.
 */
import { Type } from '@sinclair/typebox';
import { callerOf } from '../../authenticate.js';
import { defineOperation } from '../../operation.js';
import { AdminTokenId, ScopeSchema } from '../admin-tokens/schemas.js';
import { IsoTimestamp } from '../../schemas.js';
import { SCOPES } from '../../scopes.js';
import { isoTimestamp } from '../../time-format.js';

const WhoamiResponse = Type.Object(
  {
    type: Type.Unsafe<'root' | 'token'>({
      type: 'string',
      enum: ['root', 'token'],
      description: '`root`: the ROOT_TOKEN (every scope); `token`: an admin token',
    }),
    tokenId: Type.Union([AdminTokenId, Type.Null()], { description: 'The admin token’s id; null for root' }),
    name: Type.Union([Type.String(), Type.Null()], { description: 'The admin token’s name; null for root' }),
    scopes: Type.Array(ScopeSchema, {
      description: 'What the token may do, in the order of the scope table',
    }),
    expiresAt: Type.Union([IsoTimestamp, Type.Null()], {
      description: 'When the token stops working; null: never',
    }),
  },
  { additionalProperties: false, title: 'WhoamiResponse' },
);

export const whoamiOperations = [
  defineOperation({
    id: 'whoami',
    method: 'get',
    path: '/tollgate/whoami',
    scope: null,
    tag: 'Admin tokens and audit',
    summary: 'The signed-in token: its type, name and scopes',
    description: 'Needs no scope: every valid token may read what it may do itself.',
    success: { status: 200, description: 'The caller', schema: WhoamiResponse },
    async handle({ res }) {
      const { actor, scopes, expiresAt } = callerOf(res);
      res.json({
        // A caller is the root token or an admin token: `system` acts only inside Tollgate.
        type: actor.type === 'root' ? 'root' : 'token',
        tokenId: actor.id ?? null,
        name: actor.name ?? null,
        scopes: SCOPES.filter((scope) => scopes.has(scope)),
        expiresAt: expiresAt === null ? null : isoTimestamp(expiresAt),
      });
    },
  }),
];
