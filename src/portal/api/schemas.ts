/**
 * The requests and answers of the portal's own API (`/tollgate/portal/api/…`, src/portal/README.md):
 * what a signed-in portal user sends and reads, for their own consumer only.
 */
import { type Static, Type } from '@sinclair/typebox';
import { KeyLeakSchema } from '../../management/resources/leaks/schemas.js';
import {
  AllowedAddresses,
  AllowedOrigins,
  Enabled,
  ExpiresAt,
  OriginList,
} from '../../management/resources/keys/schemas.js';
import { PortalUser } from '../../management/resources/developer-portal/schemas.js';
import { RouteId } from '../../management/request-match-schemas.js';
import { MAX_TOKEN_LIFETIME_S } from '../../keys/mint-token.js';
import { CUSTOMER_ID_PATTERN, MAX_CUSTOMER_ID_LENGTH } from '../../plans/customer-id.js';
import { PlanResponse, RateLimitState } from '../../management/resources/plans/schemas.js';
import { CreditsOrNull } from '../../management/resources/credits/balance-schemas.js';
import { ConsumerId, IsoTimestamp, KeyId, Name, RateLimitId, strict } from '../../management/schemas.js';

/** The most grace a portal user may give a rolled key's previous secret (24 h). */
export const MAX_PORTAL_GRACE_SECONDS = 86_400;

export const PortalKeyParams = Type.Object(
  { keyId: { ...KeyId, description: 'A key of the signed-in consumer (`id`)' } },
  strict,
);

export const Branding = Type.Object(
  {
    title: Type.String(),
    logoUrl: Type.Union([Type.String(), Type.Null()]),
    accentColor: Type.Union([Type.String(), Type.Null()]),
    supportUrl: Type.Union([Type.String(), Type.Null()]),
    oidc: Type.Union(
      [
        Type.Object(
          {
            issuer: Type.String(),
            signInPath: Type.String({ description: 'Where "Sign in with …" sends the browser (GET)' }),
          },
          strict,
        ),
        Type.Null(),
      ],
      { description: 'null: sign-in links only' },
    ),
    apiReference: Type.Boolean({ description: 'GET …/api/reference answers a document' }),
  },
  { ...strict, title: 'PortalBranding' },
);

export const Me = Type.Object(
  {
    user: PortalUser,
    consumer: Type.Object({ id: ConsumerId, name: Type.String() }, strict),
    expiresAt: IsoTimestamp,
    csrfToken: Type.String({
      description:
        'Sent back in `x-tollgate-csrf` with every write; bound to this session, kept in memory only',
    }),
    branding: Branding,
  },
  { ...strict, title: 'PortalMe' },
);

export const PortalKey = Type.Object(
  {
    id: KeyId,
    name: Type.String(),
    createdAt: IsoTimestamp,
    lastUsedAt: Type.Union([IsoTimestamp, Type.Null()]),
    enabled: Type.Boolean(),
    disabledByAdministrator: Type.Boolean({
      description: 'Disabled by the team, not by the user: only the team can enable it',
    }),
    expiresAt: Type.Union([IsoTimestamp, Type.Null()]),
    allowedOrigins: Type.Union([Type.Array(Type.String()), Type.Null()]),
    allowedAddresses: Type.Union([Type.Array(Type.String()), Type.Null()]),
    maskedSecret: Type.String({
      description: "The secret's own prefix (`tg_…`, `acme_live_…`) and its last 4 characters",
    }),
    previousSecretExpiresAt: Type.Optional(IsoTimestamp),
    leak: KeyLeakSchema,
  },
  { ...strict, title: 'PortalKey' },
);

export const PortalKeyList = Type.Object(
  {
    keys: Type.Array(PortalKey, { description: 'Oldest first' }),
    maxKeys: Type.Integer({
      description: 'maxKeysPerConsumer: creating past it answers 409 key_limit_reached',
    }),
  },
  { ...strict, title: 'PortalKeyList' },
);

export const CreatePortalKeyRequest = Type.Object(
  {
    name: Name,
    expiresAt: Type.Optional(ExpiresAt),
    allowedOrigins: Type.Optional(AllowedOrigins),
    allowedAddresses: Type.Optional(AllowedAddresses),
  },
  { ...strict, title: 'CreatePortalKeyRequest' },
);

export const CreatePortalKeyResponse = Type.Object(
  {
    ...PortalKey.properties,
    secret: Type.String({ description: 'The whole secret: shown in this answer only' }),
  },
  { ...strict, title: 'CreatePortalKeyResponse' },
);

export const UpdatePortalKeyRequest = Type.Object(
  {
    name: Type.Optional(Name),
    enabled: Type.Optional(Enabled),
    allowedOrigins: Type.Optional(AllowedOrigins),
    allowedAddresses: Type.Optional(AllowedAddresses),
  },
  { ...strict, minProperties: 1, title: 'UpdatePortalKeyRequest' },
);

export const RollPortalKeyRequest = Type.Object(
  {
    gracePeriodSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_PORTAL_GRACE_SECONDS,
        default: 0,
        description: 'How long the previous secret keeps working, 0–86400 s (24 h)',
      }),
    ),
  },
  { ...strict, title: 'RollPortalKeyRequest' },
);

export const RollPortalKeyResponse = Type.Object(
  { id: KeyId, secret: Type.String(), previousSecretExpiresAt: IsoTimestamp },
  { ...strict, title: 'RollPortalKeyResponse' },
);

export const DeletePortalKeyResponse = Type.Object(
  { id: KeyId, message: Type.String() },
  { ...strict, title: 'DeletePortalKeyResponse' },
);

/** What a minted token lives for when the user does not say: an hour of trying the API. */
export const DEFAULT_TOKEN_SECONDS = 3_600;

export const MintPortalTokenRequest = Type.Object(
  {
    expiresInSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_TOKEN_LIFETIME_S,
        default: DEFAULT_TOKEN_SECONDS,
        description: 'How long the token works, 1–86400 s (24 h); default 1 hour',
      }),
    ),
    origins: Type.Optional({
      ...OriginList,
      description: "Narrows the token to these origins (their intersection with the key's `allowedOrigins`)",
    }),
    routes: Type.Optional(
      Type.Array(RouteId, {
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description: "Narrows the token to these route ids (their intersection with the key's routes)",
      }),
    ),
    subject: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_CUSTOMER_ID_LENGTH,
        pattern: CUSTOMER_ID_PATTERN,
        description: `The visitor: the customer id of the token's requests. 1 to ${MAX_CUSTOMER_ID_LENGTH} Unicode code points, no control character (U+0000 to U+001F, U+007F)`,
      }),
    ),
  },
  { ...strict, title: 'MintPortalTokenRequest' },
);

export const MintPortalTokenResponse = Type.Object(
  {
    token: Type.String({
      description:
        '`tgt_…`: sent as the key is (`Authorization: Bearer` or `x-api-key`); in this answer only',
    }),
    expiresAt: IsoTimestamp,
  },
  { ...strict, title: 'MintPortalTokenResponse' },
);

const planFields = {
  rateLimitId: RateLimitId,
  description: Type.String(),
  limits: PlanResponse.properties.limits,
  costs: PlanResponse.properties.costs,
  unit: PlanResponse.properties.unit,
};

export const PortalPlan = Type.Object(
  {
    current: Type.Union(
      [
        Type.Object(
          {
            ...planFields,
            state: Type.Union([RateLimitState, Type.Null()], {
              description: 'Where each limit stands now: what remains and when it resets',
            }),
          },
          strict,
        ),
        Type.Null(),
      ],
      { description: "The consumer's plan; null: none" },
    ),
    credits: CreditsOrNull,
    publicPlans: Type.Array(Type.Object(planFields, strict), {
      description: 'The plans the consumer may switch to',
    }),
  },
  { ...strict, title: 'PortalPlan' },
);

export const SwitchPlanRequest = Type.Object(
  { rateLimitId: { ...RateLimitId, description: 'One of `publicPlans`' } },
  { ...strict, title: 'SwitchPlanRequest' },
);

export const SignOutResponse = Type.Object(
  { message: Type.String() },
  { ...strict, title: 'SignOutResponse' },
);

export type Branding = Static<typeof Branding>;
export type Me = Static<typeof Me>;
export type PortalKey = Static<typeof PortalKey>;
export type PortalKeyList = Static<typeof PortalKeyList>;
export type CreatePortalKeyResponse = Static<typeof CreatePortalKeyResponse>;
export type RollPortalKeyResponse = Static<typeof RollPortalKeyResponse>;
export type MintPortalTokenResponse = Static<typeof MintPortalTokenResponse>;
export type DeletePortalKeyResponse = Static<typeof DeletePortalKeyResponse>;
export type PortalPlan = Static<typeof PortalPlan>;
