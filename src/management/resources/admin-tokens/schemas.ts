/** The requests and answers of the admin token operations. */
import { type Static, Type } from '@sinclair/typebox';
import { IsoTimestamp, IsoTimestampInput, Name, strict } from '../../schemas.js';
import { type Scope, SCOPES } from '../../scopes.js';

export const ScopeSchema = Type.Unsafe<Scope>({
  type: 'string',
  enum: [...SCOPES],
  description: 'What the token may do',
});
export const AdminTokenId = Type.String({
  pattern: '^tok_[A-Za-z0-9_-]{22}$',
  description: 'Identifier of an admin token',
  examples: ['tok_Yc2xR0f1bW8mT5nYk9Lp4A'],
});

export const CreateAdminTokenRequest = Type.Object(
  {
    name: Name,
    scopes: Type.Array(ScopeSchema, {
      minItems: 1,
      uniqueItems: true,
      description: 'At most the scopes the caller holds',
    }),
    expiresAt: Type.Optional(
      Type.Union([IsoTimestampInput, Type.Null()], { description: 'Refused from this instant; null: never' }),
    ),
  },
  { ...strict, title: 'CreateAdminTokenRequest' },
);

const adminTokenFields = {
  id: AdminTokenId,
  name: Type.String(),
  scopes: Type.Array(ScopeSchema),
  expiresAt: Type.Union([IsoTimestamp, Type.Null()]),
  createdAt: IsoTimestamp,
};

export const AdminTokenResponse = Type.Object(adminTokenFields, { ...strict, title: 'AdminToken' });

export const CreateAdminTokenResponse = Type.Object(
  {
    ...adminTokenFields,
    secret: Type.String({
      description: 'The token: shown this once, stored only as a hash',
      examples: ['tga_3lB0sGm6yq0i3I2xJfN8m0rWbq2cQ8uYd5vZk1eHhTs'],
    }),
  },
  { ...strict, title: 'CreateAdminTokenResponse' },
);

export const ListAdminTokensResponse = Type.Object(
  { adminTokens: Type.Array(AdminTokenResponse, { description: 'Oldest first; never a secret' }) },
  { ...strict, title: 'ListAdminTokensResponse' },
);

export const DeleteAdminTokenResponse = Type.Object(
  { id: AdminTokenId, message: Type.String() },
  { ...strict, title: 'DeleteAdminTokenResponse' },
);

export type CreateAdminTokenResponse = Static<typeof CreateAdminTokenResponse>;
export type AdminTokenResponse = Static<typeof AdminTokenResponse>;
export type ListAdminTokensResponse = Static<typeof ListAdminTokensResponse>;
export type DeleteAdminTokenResponse = Static<typeof DeleteAdminTokenResponse>;
