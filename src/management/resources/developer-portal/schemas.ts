/** The developer portal's settings and sessions (docs/guides/portal.md). */
import { type Static, Type } from '@sinclair/typebox';
import { ConsumerId, IsoTimestamp, NO_NUL, RateLimitId, strict } from '../../schemas.js';

export const MAX_KEYS_PER_CONSUMER = 100;
export const DEFAULT_MAX_KEYS_PER_CONSUMER = 5;
export const MAX_PUBLIC_PLANS = 50;
/** An API reference given inline: at most this many bytes of JSON. */
export const MAX_REFERENCE_DOCUMENT_BYTES = 2 * 1024 * 1024;
export const DEFAULT_SESSION_TTL_SECONDS = 28_800;

const HttpsUrl = (description: string) =>
  Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://[^\\s]+$', description });

const Colour = Type.String({
  pattern: '^#[0-9A-Fa-f]{6}$',
  description: 'The accent colour of buttons and links, `#rrggbb`',
});

const ApiReferenceSetting = Type.Union(
  [
    Type.Object(
      { url: HttpsUrl('An OpenAPI document (JSON or YAML) Tollgate fetches and serves from the portal') },
      strict,
    ),
    Type.Object(
      {
        document: Type.Record(Type.String(), Type.Unknown(), {
          description: 'The OpenAPI document itself (JSON), at most 2 MiB',
        }),
      },
      strict,
    ),
    Type.Null(),
  ],
  { description: 'The API reference the portal shows; null: none' },
);

const OidcMatch = Type.String({
  pattern: '^(externalId|metadata\\.[A-Za-z0-9_-]{1,64})$',
  description:
    "What the claim is compared with: a consumer's `externalId`, or a field of its metadata (`metadata.<field>`)",
});

/** OIDC as both the API and a configuration file (with its secret as a reference) declare it. */
export const oidcFields = {
  issuer: HttpsUrl(
    'The OpenID Provider (its discovery document is `<issuer>/.well-known/openid-configuration`)',
  ),
  clientId: Type.String({ minLength: 1, maxLength: 512, pattern: NO_NUL }),
  claim: Type.String({
    minLength: 1,
    maxLength: 128,
    pattern: NO_NUL,
    description: 'The ID token claim naming the consumer (e.g. `org_id`, `email`)',
  }),
  match: OidcMatch,
};

const OidcSetting = Type.Union(
  [
    Type.Object(
      {
        ...oidcFields,
        clientSecret: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 1024,
            pattern: NO_NUL,
            description:
              'Write-only, stored encrypted; may be left out to keep the one stored (required the first time)',
          }),
        ),
      },
      strict,
    ),
    Type.Null(),
  ],
  { description: '"Sign in with …" through the team\'s OpenID Provider; null: sign-in links only' },
);

const settingsFields = {
  enabled: Type.Boolean({
    description: 'Whether the portal answers at all (default false): its pages, API and sign-in links',
  }),
  title: Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL, description: 'Shown on every page' }),
  logoUrl: Type.Union([
    HttpsUrl(
      "An image shown beside the title: https, or the portal's own origin (the only images its pages load)",
    ),
    Type.Null(),
  ]),
  accentColor: Type.Union([Colour, Type.Null()]),
  supportUrl: Type.Union([HttpsUrl('Where the "Contact support" link goes'), Type.Null()]),
  maxKeysPerConsumer: Type.Integer({
    minimum: 0,
    maximum: MAX_KEYS_PER_CONSUMER,
    description:
      'How many keys a consumer may hold before the portal refuses to create one (0–100, default 5)',
  }),
  publicPlans: Type.Array(RateLimitId, {
    maxItems: MAX_PUBLIC_PLANS,
    uniqueItems: true,
    description: 'The plans (`rateLimitId`) a portal user may switch their consumer to',
  }),
};

export const UpdatePortalSettingsRequest = Type.Object(
  {
    enabled: Type.Optional(settingsFields.enabled),
    title: Type.Optional(settingsFields.title),
    logoUrl: Type.Optional(settingsFields.logoUrl),
    accentColor: Type.Optional(settingsFields.accentColor),
    supportUrl: Type.Optional(settingsFields.supportUrl),
    maxKeysPerConsumer: Type.Optional(settingsFields.maxKeysPerConsumer),
    publicPlans: Type.Optional(settingsFields.publicPlans),
    apiReference: Type.Optional(ApiReferenceSetting),
    oidc: Type.Optional(OidcSetting),
  },
  { ...strict, minProperties: 1, title: 'UpdatePortalSettingsRequest' },
);

export const PortalSettingsResponse = Type.Object(
  {
    ...settingsFields,
    apiReference: Type.Union([
      Type.Object(
        {
          url: Type.String(),
          fetchedAt: Type.Union([IsoTimestamp, Type.Null()], {
            description: 'When Tollgate last fetched it successfully; null: never',
          }),
          fetchError: Type.Union([Type.String(), Type.Null()], {
            description: 'Why the last fetch failed; null: it did not',
          }),
        },
        strict,
      ),
      Type.Object({ document: Type.Record(Type.String(), Type.Unknown()) }, strict),
      Type.Null(),
    ]),
    oidc: Type.Union([
      Type.Object(
        {
          ...oidcFields,
          clientSecretSet: Type.Boolean({ description: 'A client secret is stored (it is never shown)' }),
          redirectUri: Type.String({
            description: "The redirect URI to register with the provider (the portal's callback)",
          }),
        },
        strict,
      ),
      Type.Null(),
    ]),
    lastUpdated: Type.Union([IsoTimestamp, Type.Null()], { description: 'null: never changed' }),
  },
  { ...strict, title: 'PortalSettings' },
);

export const PortalUser = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      maxLength: 200,
      pattern: NO_NUL,
      description: "The user's id in your system",
    }),
    email: Type.Optional(Type.String({ minLength: 3, maxLength: 320, pattern: '^[^\\s@]+@[^\\s@]+$' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NO_NUL })),
  },
  { ...strict, title: 'PortalUser' },
);

export const CreatePortalSessionRequest = Type.Object(
  {
    consumerId: ConsumerId,
    user: PortalUser,
    ttlSeconds: Type.Optional(
      Type.Integer({
        minimum: 300,
        maximum: 86_400,
        default: DEFAULT_SESSION_TTL_SECONDS,
        description: 'How long the session lasts from sign-in (300–86400 s, default 28800: 8 h)',
      }),
    ),
  },
  { ...strict, title: 'CreatePortalSessionRequest' },
);

export const PORTAL_SESSION_ID_PATTERN = '^pss_[A-Za-z0-9_-]{22}$';
export const PortalSessionId = Type.String({
  pattern: PORTAL_SESSION_ID_PATTERN,
  description: 'A portal session (`pss_…`): names it, grants nothing',
});

export const CreatePortalSessionResponse = Type.Object(
  {
    sessionId: PortalSessionId,
    url: Type.String({
      description:
        'Signs the user in once, until `expiresAt` (10 minutes); send it to the user only (it holds a one-time code)',
    }),
    expiresAt: IsoTimestamp,
  },
  { ...strict, title: 'CreatePortalSessionResponse' },
);

export const PortalSession = Type.Object(
  {
    sessionId: PortalSessionId,
    consumerId: ConsumerId,
    user: PortalUser,
    signedIn: Type.Boolean({ description: 'false: its sign-in link has not been used yet' }),
    createdAt: IsoTimestamp,
    expiresAt: {
      ...IsoTimestamp,
      description: 'When the session ends (before sign-in: when its link stops working)',
    },
  },
  { ...strict, title: 'PortalSession' },
);

export const ListPortalSessionsQuery = Type.Object(
  { consumerId: Type.Optional(ConsumerId) },
  { ...strict, title: 'ListPortalSessionsQuery' },
);

export const ListPortalSessionsResponse = Type.Object(
  {
    sessions: Type.Array(PortalSession, { description: 'Active sessions (and unused links), newest first' }),
  },
  { ...strict, title: 'ListPortalSessionsResponse' },
);

export const DeletePortalSessionResponse = Type.Object(
  { sessionId: PortalSessionId, message: Type.String() },
  { ...strict, title: 'DeletePortalSessionResponse' },
);

export const ApiReferenceFetchResponse = Type.Object(
  {
    url: Type.String(),
    fetchedAt: Type.Union([IsoTimestamp, Type.Null()]),
    fetchError: Type.Union([Type.String(), Type.Null()]),
  },
  { ...strict, title: 'ApiReferenceFetchResponse' },
);

export type UpdatePortalSettingsRequest = Static<typeof UpdatePortalSettingsRequest>;
export type PortalSettingsResponse = Static<typeof PortalSettingsResponse>;
export type PortalUser = Static<typeof PortalUser>;
export type CreatePortalSessionRequest = Static<typeof CreatePortalSessionRequest>;
export type CreatePortalSessionResponse = Static<typeof CreatePortalSessionResponse>;
export type PortalSession = Static<typeof PortalSession>;
export type ListPortalSessionsResponse = Static<typeof ListPortalSessionsResponse>;
export type DeletePortalSessionResponse = Static<typeof DeletePortalSessionResponse>;
export type ApiReferenceFetchResponse = Static<typeof ApiReferenceFetchResponse>;
