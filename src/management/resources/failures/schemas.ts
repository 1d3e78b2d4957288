/** The failure log's query and answer (docs/guides/failures.md). */
import { type Static, Type } from '@sinclair/typebox';
import { IsoTimestampInput, NextCursor, pageFields, strict } from '../../schemas.js';
import { whileBelongingTo } from '../usage/schemas.js';
import { PerSchema } from '../plans/schemas.js';

export const FailuresQuery = Type.Object(
  {
    ...pageFields,
    from: Type.Optional({ ...IsoTimestampInput, description: 'Failures at or after this instant' }),
    to: Type.Optional({ ...IsoTimestampInput, description: 'Failures before this instant' }),
    code: Type.Optional(
      Type.String({
        pattern: '^[a-z_]{1,64}$',
        description: 'Only failures with this code (`rate_limit_exceeded`, `backend_error`, …)',
      }),
    ),
    requestId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        pattern: '^[\\x21-\\x7e]+$',
        description: 'Only the failure of this request (the `x-request-id` the client got)',
      }),
    ),
  },
  { ...strict, title: 'FailuresQuery' },
);
export type FailuresQuery = Static<typeof FailuresQuery>;

export const KeyFailuresQuery = Type.Object(
  { ...FailuresQuery.properties, ...whileBelongingTo },
  { ...strict, title: 'KeyFailuresQuery' },
);
export type KeyFailuresQuery = Static<typeof KeyFailuresQuery>;

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

export const Failure = Type.Object(
  {
    time: Type.String({
      format: 'date-time',
      description: 'When the request arrived: UTC with milliseconds, YYYY-MM-DDThh:mm:ss.sssZ',
    }),
    requestId: Type.String({ description: 'The `x-request-id` the client got' }),
    consumerApiKeyId: Type.String({ description: 'The key the request presented' }),
    consumerId: Nullable(Type.String(), 'The consumer the key belonged to then; null: none'),
    method: Type.String({
      description: 'The request method (for verify: the `method` asked about, or empty)',
    }),
    path: Type.String({ description: 'The request path, never its query' }),
    routeId: Nullable(Type.String(), 'The route it took; null: the catch-all, or none'),
    status: Type.Integer({ description: 'What the client got' }),
    code: Type.String({
      description:
        "The refusal's code (`rate_limit_exceeded`, `credits_exhausted`, `key_disabled`, …), or what the backend did: `backend_error` (it answered 5xx), `backend_client_error` (it answered 4xx), `backend_unreachable` (502), `gateway_timeout` (504: its deadline, UPSTREAM_TIMEOUT_MS or the route's `timeoutMs`, passed), `client_closed` (499: the client left first)",
    }),
    limit: Type.Union(
      [
        Type.Object(
          {
            name: Type.String(),
            period: Type.Union([Type.String(), Type.Null()], { description: 'null for a concurrency limit' }),
            scope: Type.String({ description: '`key` or `consumer`' }),
            limit: Type.Integer(),
            per: Type.Optional({
              ...PerSchema,
              description: `${PerSchema.description}. Absent on an entry recorded before the log kept it`,
            }),
          },
          strict,
        ),
        Type.Null(),
      ],
      {
        description:
          'The refusing limit of a 429 `rate_limit_exceeded` or `concurrency_limit_exceeded`; null otherwise',
      },
    ),
    clientAddress: Nullable(Type.String(), "The client's address (verify: `clientAddress`, if sent)"),
    customerId: Nullable(Type.String(), 'The CUSTOMER_ID_HEADER value, if sent'),
    durationMs: Type.Number({ description: 'Request received to response finished' }),
  },
  { ...strict, title: 'Failure' },
);
export type Failure = Static<typeof Failure>;

export const FailuresResponse = Type.Object(
  {
    failures: Type.Array(Failure, { description: 'Newest first' }),
    nextCursor: NextCursor,
    leftOut: Type.Integer({
      description:
        'Failures of the range (and `code`) that were not kept: past 100 per key per minute, counted by the minutes the range overlaps',
    }),
  },
  { ...strict, title: 'FailuresResponse' },
);
export type FailuresResponse = Static<typeof FailuresResponse>;
