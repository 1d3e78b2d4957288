/** The requests and answers of the consumer API key operations. */
import { ORIGIN_PATTERN } from '../../../plans/origins.js';
import { type Static, Type } from '@sinclair/typebox';
import { KeyLeakSchema } from '../leaks/schemas.js';
import { RouteId } from '../../request-match-schemas.js';
import { CreditsInput, CreditsOrNull, CreditsUpdate } from '../credits/balance-schemas.js';
import { KEY_SORTS, type KeySort } from './list-sort.js';
import { Usage } from '../usage/schemas.js';
import {
  ConsumerId,
  CREATE_TIMESTAMP_PATTERN,
  ExternalId,
  IsoTimestamp,
  IsoTimestampInput,
  KeyId,
  Metadata,
  MetadataSetting,
  Name,
  NextCursor,
  pageFields,
  RateLimitId,
  strict,
} from '../../schemas.js';

/** The key list counts matching keys up to this many: a bound on the work of `count=true`. */
export const MAX_COUNTED_KEYS = 10_000;

export const MAX_GRACE_PERIOD_SECONDS = 604_800;

const CreateTimestamp = Type.String({
  pattern: CREATE_TIMESTAMP_PATTERN,
  description: 'UTC, whole seconds: YYYY-MM-DD HH:MM:SS (this response only, as the service spec shows it)',
  examples: ['2026-11-21 14:23:02'],
});

const AllowedRouteIds = Type.Union(
  [
    Type.Array(RouteId, {
      maxItems: 100,
      uniqueItems: true,
      description: 'Route ids (docs/guides/routes.md)',
    }),
    Type.Null(),
  ],
  {
    description:
      'The routes the key may take; a request any other route (or the catch-all, UPSTREAM_URL) takes is refused with 403 `route_not_allowed`, not forwarded and not charged. null: every route',
  },
);
/** 1–50 origins a key (or a token of it) is narrowed to. */
export const OriginList = Type.Array(Type.String({ maxLength: 300, pattern: ORIGIN_PATTERN }), {
  minItems: 1,
  maxItems: 50,
  uniqueItems: true,
  description:
    'Exact origins (`https://app.example.com`, `http://localhost:5173`) or wildcard subdomains (`https://*.example.com`; not over a public suffix such as `https://*.co.uk`, by the Public Suffix List), in lower case; `*` is not one',
});
export const AllowedOrigins = Type.Union([OriginList, Type.Null()], {
  description:
    "The web pages the key may be used from (docs/guides/browser.md): a request whose `Origin` (or, without one, whose `Referer`'s origin) matches none, or that names none, is refused with 403 `origin_not_allowed`, not forwarded and not charged. null: any",
});
export const AllowedAddresses = Type.Union(
  [
    Type.Array(Type.String({ minLength: 2, maxLength: 50 }), {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description: 'IPv4 or IPv6 addresses or CIDR blocks: `203.0.113.7`, `203.0.113.0/24`, `2001:db8::/32`',
    }),
    Type.Null(),
  ],
  {
    description:
      'The client addresses the key may be used from (the client as TRUST_PROXY decides, see the README): a request from any other is refused with 403 `address_not_allowed`, not forwarded and not charged. null: any',
  },
);
const Secret = Type.String({
  description: 'The consumer API key itself (`Authorization: Bearer <secret>` or `x-api-key: <secret>`)',
  examples: ['tg_3lB0sGm6yq0i3I2xJfN8m0rWbq2cQ8uYd5vZk1eHhTs'],
});

export const Enabled = Type.Boolean({
  description: 'A disabled key is refused with 403 key_disabled, without consuming quota',
});
export const ExpiresAt = Type.Union([IsoTimestampInput, Type.Null()], {
  description: 'From this instant the key is refused with 401 key_expired; null: never',
});

const keySettings = {
  externalId: Type.Optional(Type.Union([ExternalId, Type.Null()])),
  metadata: MetadataSetting,
  enabled: Type.Optional(Enabled),
  expiresAt: Type.Optional(ExpiresAt),
  consumerId: Type.Optional(
    Type.Union([ConsumerId, Type.Null()], { description: 'The consumer the key belongs to; null: none' }),
  ),
  allowedRouteIds: Type.Optional(AllowedRouteIds),
  allowedOrigins: Type.Optional(AllowedOrigins),
  allowedAddresses: Type.Optional(AllowedAddresses),
  credits: Type.Optional(CreditsInput),
};

export const CreateKeyRequest = Type.Object(
  { name: Name, ...keySettings, rateLimitId: Type.Optional(Type.Union([RateLimitId, Type.Null()])) },
  { ...strict, title: 'CreateKeyRequest' },
);

export const UpdateKeyRequest = Type.Object(
  { name: Type.Optional(Name), ...keySettings, credits: Type.Optional(CreditsUpdate) },
  {
    ...strict,
    minProperties: 1,
    title: 'UpdateKeyRequest',
    description:
      'Any of the fields; null clears externalId, expiresAt, consumerId, allowedRouteIds (every route), allowedOrigins and allowedAddresses (anywhere), credits and metadata (to `{}`)',
  },
);

export const RollKeyRequest = Type.Object(
  {
    gracePeriodSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_GRACE_PERIOD_SECONDS,
        default: 0,
        description:
          'How long the previous secret keeps working, 0-604800 s (7 days): until the first whole second at least this long after the roll (`previousSecretExpiresAt`); 0: refused at once',
      }),
    ),
  },
  { ...strict, title: 'RollKeyRequest' },
);

export const ListKeysQuery = Type.Object(
  {
    ...pageFields,
    rateLimitId: Type.Optional(RateLimitId),
    enabled: Type.Optional(Type.Boolean({ description: '`true` or `false`' })),
    externalId: Type.Optional(ExternalId),
    namePrefix: Type.Optional({
      ...Name,
      description: 'Keys whose name starts with this text (case-sensitive)',
    }),
    name: Type.Optional({
      ...Name,
      description:
        'Keys whose name starts with this text, ignoring case (every letter on Postgres; A-Z on the embedded store)',
    }),
    consumerId: Type.Optional({ ...ConsumerId, description: 'Keys of this consumer' }),
    sort: Type.Optional(
      Type.Unsafe<KeySort>({
        type: 'string',
        enum: [...KEY_SORTS],
        default: 'createdAt',
        description:
          '`createdAt`: oldest first; `-createdAt`: newest first; `-lastUsedAt`: most recently used first, never-used last (`lastUsedAt`: the reverse); `-requests24h`: most requests in the last 24 hours (by whole hours, as the usage API counts them) first (`requests24h`: the reverse). Ties go by key id. A cursor continues the order it was issued for; a traffic order keeps the window of its first page',
      }),
    ),
    count: Type.Optional(
      Type.Boolean({
        description: `\`true\`: the answer carries \`total\`, how many keys match the filters (counted up to ${MAX_COUNTED_KEYS.toLocaleString('en-US')})`,
      }),
    ),
  },
  { ...strict, title: 'ListKeysQuery' },
);

const keyStateFields = {
  rateLimitId: Type.Union([RateLimitId, Type.Null()], { description: 'The bound plan, or null' }),
  enabled: Type.Boolean(),
  expiresAt: Type.Union([IsoTimestamp, Type.Null()]),
  externalId: Type.Union([Type.String(), Type.Null()]),
  lastUsedAt: Type.Union([IsoTimestamp, Type.Null()], {
    description: 'The last proxied request that presented the key (visible within 2 s), or null',
  }),
  consumerId: Type.Union([ConsumerId, Type.Null()], {
    description: 'The consumer the key belongs to, or null',
  }),
  allowedRouteIds: AllowedRouteIds,
  allowedOrigins: AllowedOrigins,
  allowedAddresses: AllowedAddresses,
};

export const CreateKeyResponse = Type.Object(
  {
    id: KeyId,
    name: Type.String(),
    secret: Secret,
    createdAt: CreateTimestamp,
    ...keyStateFields,
    metadata: Metadata,
    credits: CreditsOrNull,
  },
  { ...strict, title: 'CreateKeyResponse' },
);

export const KeySummary = Type.Object(
  {
    consumerApiKeyId: KeyId,
    name: Type.String(),
    createdAt: IsoTimestamp,
    lastUpdated: IsoTimestamp,
    ...keyStateFields,
  },
  { ...strict, title: 'KeySummary' },
);

export const ListKeysResponse = Type.Object(
  {
    apiKeys: Type.Array(KeySummary, { description: 'In the order `sort` names (oldest first by default)' }),
    nextCursor: NextCursor,
    total: Type.Optional(
      Type.Object(
        {
          count: Type.Integer({ minimum: 0, maximum: MAX_COUNTED_KEYS }),
          exact: Type.Boolean({
            description: `false: more than \`count\` (${MAX_COUNTED_KEYS.toLocaleString('en-US')}) keys match`,
          }),
        },
        { ...strict, description: 'With `count=true`: how many keys match the filters' },
      ),
    ),
  },
  { ...strict, title: 'ListKeysResponse' },
);

const keyFields = {
  consumerApiKeyId: KeyId,
  name: Type.String(),
  secret: Type.Optional({
    ...Secret,
    description: `${Secret.description}; present only for callers holding keys:secrets`,
  }),
  createdAt: IsoTimestamp,
  lastUpdated: IsoTimestamp,
  ...keyStateFields,
  metadata: Metadata,
  credits: CreditsOrNull,
  previousSecretExpiresAt: Type.Optional({
    ...IsoTimestamp,
    description:
      'Present after a roll while the previous secret still works: it is refused (401 invalid_api_key) from this instant, as the roll answered',
  }),
  leak: KeyLeakSchema,
};

export const KeyDetailResponse = Type.Object(
  { ...keyFields, usage: Usage },
  { ...strict, title: 'KeyDetailResponse' },
);

/** A key as the detail shows it, without `usage`: the answer to a change. */
export const KeyResponse = Type.Object(keyFields, { ...strict, title: 'KeyResponse' });

export const RollKeyResponse = Type.Object(
  {
    consumerApiKeyId: KeyId,
    secret: { ...Secret, description: 'The new secret; works at once on every replica' },
    previousSecretExpiresAt: {
      ...IsoTimestamp,
      description: 'The previous secret is refused (401 invalid_api_key) from this instant on every replica',
    },
  },
  { ...strict, title: 'RollKeyResponse' },
);

export const DeleteKeyResponse = Type.Object(
  { consumerApiKeyId: KeyId, message: Type.String() },
  { ...strict, title: 'DeleteKeyResponse' },
);

export type CreateKeyRequest = Static<typeof CreateKeyRequest>;
export type UpdateKeyRequest = Static<typeof UpdateKeyRequest>;
export type KeyResponse = Static<typeof KeyResponse>;
export type RollKeyResponse = Static<typeof RollKeyResponse>;
export type ListKeysQuery = Static<typeof ListKeysQuery>;
export type CreateKeyResponse = Static<typeof CreateKeyResponse>;
export type ListKeysResponse = Static<typeof ListKeysResponse>;
export type KeyDetailResponse = Static<typeof KeyDetailResponse>;
export type DeleteKeyResponse = Static<typeof DeleteKeyResponse>;
