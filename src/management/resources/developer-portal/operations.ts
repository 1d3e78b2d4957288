/**
 * The developer portal in the management API (docs/guides/portal.md): its
 * settings, and the sign-in links and sessions of its users. The portal's own pages and API are
 * src/portal/; these paths under /tollgate/portal/ take a bearer token like every management call.
 */
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { AppError } from '../../../errors.js';
import { encryptSecret, hashSecret } from '../../../keys/secret.js';
import type { PortalSettings, StoredPortalSettings } from '../../../store/portal-settings-repository.js';
import type { PortalSessionRow } from '../../../store/portal-session-repository.js';
import { defineOperation } from '../../operation.js';
import { isoTimestamp } from '../../time-format.js';
import type { ValidationDetail } from '../../schemas.js';
import { refreshApiReference } from './api-reference.js';
import { savedUrlProblem } from './reference-reach.js';
import { portalOrigin, portalPaths } from './portal-origin.js';
import type { PortalSession } from './schemas.js';
import {
  ApiReferenceFetchResponse,
  CreatePortalSessionRequest,
  CreatePortalSessionResponse,
  DEFAULT_SESSION_TTL_SECONDS,
  DeletePortalSessionResponse,
  ListPortalSessionsQuery,
  ListPortalSessionsResponse,
  MAX_REFERENCE_DOCUMENT_BYTES,
  PortalSessionId,
  PortalSettingsResponse,
  UpdatePortalSettingsRequest,
} from './schemas.js';

const TAG = 'Developer portal';
const SETTINGS_PATH = '/tollgate/portal/settings';
const SESSIONS_PATH = '/tollgate/portal/sessions';
/** How long a sign-in link works (docs/guides/portal.md). */
export const SIGN_IN_LINK_MS = 10 * 60_000;

const isoOrNull = (instant: Date | null): string | null => (instant === null ? null : isoTimestamp(instant));

function settingsView(stored: StoredPortalSettings, redirectUri: string): PortalSettingsResponse {
  const { settings, reference } = stored;
  const apiReference =
    settings.apiReference === null
      ? null
      : 'url' in settings.apiReference
        ? {
            url: settings.apiReference.url,
            fetchedAt: isoOrNull(reference.fetchedAt),
            fetchError: reference.error,
          }
        : { document: settings.apiReference.document };
  return {
    ...settings,
    publicPlans: [...settings.publicPlans],
    apiReference,
    oidc:
      settings.oidc === null
        ? null
        : { ...settings.oidc, clientSecretSet: stored.oidcSecretCiphertext !== null, redirectUri },
    lastUpdated: isoOrNull(stored.lastUpdated),
  };
}

/** What the audit log records of the settings: never the client secret, only whether one is set. */
const settingsAudit = (settings: PortalSettings, secretSet: boolean) => ({
  ...settings,
  oidc: settings.oidc && { ...settings.oidc, clientSecretSet: secretSet },
});

const sessionView = (session: PortalSessionRow): PortalSession => ({
  sessionId: session.id,
  consumerId: session.consumerId,
  user: { ...session.user },
  signedIn: session.signedIn,
  createdAt: isoTimestamp(session.createdAt),
  expiresAt: isoTimestamp(session.expiresAt),
});

/** What the audit log records of a session: never its code or token. */
const sessionAudit = (session: PortalSessionRow) => sessionView(session);

function settingsProblems(body: UpdatePortalSettingsRequest): ValidationDetail[] {
  const reference = body.apiReference;
  if (
    reference &&
    'document' in reference &&
    Buffer.byteLength(JSON.stringify(reference.document)) > MAX_REFERENCE_DOCUMENT_BYTES
  )
    return [
      { field: 'apiReference.document', message: `must be at most ${MAX_REFERENCE_DOCUMENT_BYTES} bytes` },
    ];
  return [];
}

/**
 * Why `logoUrl` would never show, or undefined: the portal's pages load images over https or from
 * their own origin only (src/portal/pages/portal-pages.ts).
 */
function logoProblem(logoUrl: string | null | undefined, origin: string): string | undefined {
  if (!logoUrl || logoUrl.startsWith('https://') || URL.parse(logoUrl)?.origin === origin) return undefined;
  return "must be https (or on the portal's own origin): the portal's pages show no other image";
}

const redirectUriOf = (origin: string, prefix: string) => `${origin}${portalPaths(prefix).oidcCallback}`;

export const portalOperations = [
  defineOperation({
    id: 'getPortalSettings',
    method: 'get',
    path: SETTINGS_PATH,
    scope: 'portal:read',
    tag: TAG,
    summary: "The developer portal's settings",
    description:
      'The OIDC client secret is never shown (`clientSecretSet` says whether one is stored); `redirectUri` is the callback to register with the provider.',
    success: { status: 200, description: 'The settings', schema: PortalSettingsResponse },
    async handle({ req, res, ctx }) {
      const stored = await ctx.portal.get();
      res.json(settingsView(stored, redirectUriOf(portalOrigin(req, ctx.trustProxy), ctx.prefix)));
    },
  }),

  defineOperation({
    id: 'updatePortalSettings',
    method: 'patch',
    path: SETTINGS_PATH,
    scope: 'portal:write',
    tag: TAG,
    summary:
      'Change the developer portal: on or off, branding, key limit, public plans, API reference, OIDC sign-in',
    description:
      "Any of the fields; `null` clears `logoUrl`, `accentColor`, `supportUrl`, `apiReference` and `oidc`. `oidc.clientSecret` is write-only, stored encrypted like a key's secret, required the first time and kept when left out. A new `apiReference.url` is fetched at once (the answer says whether it worked); it must be https (http with PORTAL_REFERENCE_ALLOW_HTTP=true) and name only public addresses, whatever the spelling, and each connection and redirect of the fetch is checked again (PORTAL_REFERENCE_ALLOW_PRIVATE=true lifts that); the portal serves the copy from its own origin, its Markdown without HTML. `logoUrl` must be https or on the portal's own origin. A body that sets only what is set changes nothing (no audit entry).",
    body: { schema: UpdatePortalSettingsRequest, check: settingsProblems },
    success: { status: 200, description: 'The settings as they now are', schema: PortalSettingsResponse },
    errors: { rate_limit_not_found: 'A plan of `publicPlans` does not exist' },
    async handle({ body, req, res, ctx }) {
      const { clientSecret, ...oidcGiven } = body.oidc ?? {};
      const logo = logoProblem(body.logoUrl, portalOrigin(req, ctx.trustProxy));
      if (logo !== undefined)
        throw new AppError('validation_failed', `The request is not valid: logoUrl ${logo}`, [
          { field: 'logoUrl', message: logo },
        ]);
      const reference = body.apiReference;
      const referenceProblem =
        reference && 'url' in reference
          ? await savedUrlProblem(reference.url, ctx.portalReference)
          : undefined;
      if (referenceProblem !== undefined)
        throw new AppError(
          'validation_failed',
          `The request is not valid: apiReference.url ${referenceProblem}`,
          [{ field: 'apiReference.url', message: referenceProblem }],
        );
      const fetchUrl = await ctx.audited(res, async ({ portal, plans }) => {
        const before = await portal.get();
        for (const [i, rateLimitId] of (body.publicPlans ?? []).entries())
          if (!(await plans.get(rateLimitId)))
            throw new AppError('rate_limit_not_found', `publicPlans[${i}] (${rateLimitId}) names no plan`);
        if (body.oidc && clientSecret === undefined && before.oidcSecretCiphertext === null)
          throw new AppError('validation_failed', 'The request is not valid: oidc.clientSecret is required', [
            { field: 'oidc.clientSecret', message: 'is required (no client secret is stored yet)' },
          ]);
        const { oidc: _oidc, ...plain } = body;
        const settings: PortalSettings = {
          ...before.settings,
          ...plain,
          ...(body.oidc !== undefined && {
            oidc: body.oidc === null ? null : (oidcGiven as PortalSettings['oidc']),
          }),
        };
        const ciphertext =
          body.oidc === null
            ? null
            : clientSecret !== undefined
              ? encryptSecret(clientSecret, ctx.sealingKey)
              : before.oidcSecretCiphertext;
        const referenceKept =
          JSON.stringify(settings.apiReference) === JSON.stringify(before.settings.apiReference);
        if (
          before.lastUpdated !== null &&
          referenceKept &&
          clientSecret === undefined &&
          JSON.stringify(settings) === JSON.stringify(before.settings)
        )
          return { result: undefined, unchanged: true as const };
        await portal.save(settings, ciphertext, referenceKept, ctx.now());
        const fetch = !referenceKept && settings.apiReference !== null && 'url' in settings.apiReference;
        return {
          result: fetch ? (settings.apiReference as { url: string }).url : undefined,
          action: 'portal.update_settings',
          target: { type: 'portal', id: 'settings' },
          before:
            before.lastUpdated === null
              ? null
              : settingsAudit(before.settings, before.oidcSecretCiphertext !== null),
          after: settingsAudit(settings, ciphertext !== null),
        };
      });
      if (fetchUrl !== undefined)
        await refreshApiReference(fetchUrl, ctx.portalReference, ctx.portal, ctx.now);
      const stored = await ctx.portal.get();
      res.json(settingsView(stored, redirectUriOf(portalOrigin(req, ctx.trustProxy), ctx.prefix)));
    },
  }),

  defineOperation({
    id: 'fetchPortalApiReference',
    method: 'post',
    path: `${SETTINGS_PATH}/api-reference/fetch`,
    scope: 'portal:write',
    tag: TAG,
    summary: 'Fetch `apiReference.url` again now',
    description:
      'The portal goes on serving the last good copy when the fetch fails; `fetchError` says why it failed.',
    success: { status: 200, description: 'What the fetch brought', schema: ApiReferenceFetchResponse },
    errors: { not_found: 'The portal has no `apiReference.url`' },
    async handle({ res, ctx }) {
      const { settings } = await ctx.portal.get();
      const reference = settings.apiReference;
      if (reference === null || !('url' in reference))
        throw new AppError('not_found', 'The portal has no apiReference.url to fetch');
      await refreshApiReference(reference.url, ctx.portalReference, ctx.portal, ctx.now);
      const stored = await ctx.portal.get();
      const answer: ApiReferenceFetchResponse = {
        url: reference.url,
        fetchedAt: isoOrNull(stored.reference.fetchedAt),
        fetchError: stored.reference.error,
      };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'createPortalSession',
    method: 'post',
    path: SESSIONS_PATH,
    scope: 'portal:sessions',
    tag: TAG,
    summary: 'A sign-in link to the portal for a user your backend has signed in',
    description:
      '`url` signs the user in once, until `expiresAt` (10 minutes); the session then lasts `ttlSeconds` from sign-in. Send the link to that user only: it holds a one-time code (never logged, stored only as a hash). The user acts for the consumer only.',
    body: { schema: CreatePortalSessionRequest },
    success: {
      status: 201,
      description: 'Created',
      schema: CreatePortalSessionResponse,
      headers: { Location: 'The sessions of the consumer' },
    },
    errors: {
      consumer_not_found: '`consumerId` names no consumer',
      portal_disabled: 'The portal is off (`enabled` false in its settings)',
    },
    async handle({ body, req, res, ctx }) {
      const id = 'pss_' + randomBytes(16).toString('base64url');
      const code = randomBytes(32).toString('base64url');
      const createdAt = ctx.now();
      const codeExpiresAt = new Date(createdAt.getTime() + SIGN_IN_LINK_MS);
      await ctx.audited(res, async ({ portal, consumers, portalSessions }) => {
        if (!(await consumers.get(body.consumerId, 'key share'))) throw new AppError('consumer_not_found');
        if (!(await portal.get()).settings.enabled) throw new AppError('portal_disabled');
        await portalSessions.insert({
          id,
          consumerId: body.consumerId,
          user: body.user,
          ttlSeconds: body.ttlSeconds ?? DEFAULT_SESSION_TTL_SECONDS,
          createdAt,
          code: { hash: hashSecret(code), expiresAt: codeExpiresAt },
        });
        const session = (await portalSessions.listActive(body.consumerId, createdAt)).find(
          (s) => s.id === id,
        )!;
        return {
          result: undefined,
          action: 'portal.session_create',
          target: { type: 'portal_session', id },
          before: null,
          after: sessionAudit(session),
        };
      });
      const url = `${portalOrigin(req, ctx.trustProxy)}${portalPaths(ctx.prefix).signIn}?code=${code}`;
      const answer: CreatePortalSessionResponse = {
        sessionId: id,
        url,
        expiresAt: isoTimestamp(codeExpiresAt),
      };
      res.status(201).location(`${ctx.prefix}${SESSIONS_PATH}?consumerId=${body.consumerId}`).json(answer);
    },
  }),

  defineOperation({
    id: 'listPortalSessions',
    method: 'get',
    path: SESSIONS_PATH,
    scope: 'portal:sessions',
    tag: TAG,
    summary: 'Active portal sessions (and sign-in links not used yet), newest first',
    query: { schema: ListPortalSessionsQuery },
    success: { status: 200, description: 'The sessions', schema: ListPortalSessionsResponse },
    async handle({ query, res, ctx }) {
      const sessions = await ctx.portalSessions.listActive(query.consumerId, ctx.now());
      const answer: ListPortalSessionsResponse = { sessions: sessions.map(sessionView) };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'deletePortalSession',
    method: 'delete',
    path: `${SESSIONS_PATH}/:sessionId`,
    scope: 'portal:sessions',
    tag: TAG,
    summary: 'End a portal session (or an unused sign-in link)',
    description: 'Every replica refuses the session from its next request on.',
    params: {
      schema: Type.Object({ sessionId: { ...PortalSessionId, description: 'The session (`sessionId`)' } }),
      notFound: 'session_not_found',
    },
    success: { status: 200, description: 'Ended', schema: DeletePortalSessionResponse },
    errors: { session_not_found: 'No active session has that id' },
    async handle({ params: { sessionId }, res, ctx }) {
      await ctx.audited(res, async ({ portalSessions }) => {
        const ended = await portalSessions.end(sessionId, ctx.now());
        if (!ended) throw new AppError('session_not_found');
        return {
          result: undefined,
          action: 'portal.session_delete',
          target: { type: 'portal_session', id: sessionId },
          before: sessionAudit(ended),
          after: null,
        };
      });
      const answer: DeletePortalSessionResponse = {
        sessionId,
        message: `Portal session ${sessionId} has been ended`,
      };
      res.json(answer);
    },
  }),
];
