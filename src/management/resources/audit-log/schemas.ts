/** The audit log's query and answer. */
import { type Static, Type } from '@sinclair/typebox';
import { AdminTokenId } from '../admin-tokens/schemas.js';
import {
  ConsumerId,
  IsoTimestamp,
  IsoTimestampInput,
  NextCursor,
  NO_NUL,
  pageFields,
  strict,
} from '../../schemas.js';
import { AUDIT_ACTIONS } from '../../../store/audit-actions.js';

export const AuditLogQuery = Type.Object(
  {
    ...pageFields,
    action: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: NO_NUL,
        description: `Only this action: ${AUDIT_ACTIONS.join(', ')}`,
      }),
    ),
    targetId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        pattern: NO_NUL,
        description:
          'Only changes of this key, plan, consumer, route, admin token, webhook or billing export',
      }),
    ),
    actorId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        pattern: NO_NUL,
        description:
          'Only changes made with this admin token (its `id`); `root`: with the root token; `system`: by Tollgate itself',
      }),
    ),
    from: Type.Optional({ ...IsoTimestampInput, description: 'Entries at or after this instant' }),
    to: Type.Optional({ ...IsoTimestampInput, description: 'Entries before this instant' }),
  },
  { ...strict, title: 'AuditLogQuery' },
);

export const AuditEntry = Type.Object(
  {
    id: Type.String(),
    time: IsoTimestamp,
    actor: Type.Object(
      {
        type: Type.Union([
          Type.Literal('root'),
          Type.Literal('token'),
          Type.Literal('system'),
          Type.Literal('portal'),
        ]),
        id: Type.Optional(
          Type.Union([AdminTokenId, Type.String({ description: 'A portal user: their id' })]),
        ),
        name: Type.Optional(Type.String()),
        consumerId: Type.Optional({
          ...ConsumerId,
          description: 'A portal user: the consumer they act for',
        }),
      },
      {
        ...strict,
        description:
          'The root token, an admin token (its id and name), Tollgate itself (`system`: a webhook it disabled after 3 days of failures; named `secret-scanning`: a key GitHub reported leaked), or a user of the developer portal (`portal`: their id, email or name, and consumer)',
      },
    ),
    action: Type.Union(
      AUDIT_ACTIONS.map((action) => Type.Literal(action)),
      { description: 'What changed (`webhook.disable` is also written by `system`)' },
    ),
    target: Type.Object(
      {
        type: Type.String({
          description: 'key, plan, consumer, route (by routeId), admin_token, webhook or billing_export',
        }),
        id: Type.String(),
      },
      strict,
    ),
    requestId: Type.String({ description: 'The x-request-id of the call; empty for `system` entries' }),
    clientAddress: Type.String({ description: "The caller's address; empty for `system` entries" }),
    changes: Type.Object(
      {
        before: Type.Unknown({ description: 'The target before; null: it did not exist' }),
        after: Type.Unknown({ description: 'The target after; null: it no longer exists' }),
      },
      { ...strict, description: 'Never a secret, token, hash or ciphertext' },
    ),
  },
  { ...strict, title: 'AuditEntry' },
);

export const AuditLogResponse = Type.Object(
  {
    auditLog: Type.Array(AuditEntry, { description: 'Newest first' }),
    nextCursor: NextCursor,
  },
  { ...strict, title: 'AuditLogResponse' },
);

export type AuditLogResponse = Static<typeof AuditLogResponse>;
