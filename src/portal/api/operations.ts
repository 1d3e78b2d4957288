/**
 * The portal's own API (src/portal/README.md): a second, small operation list, registered behind the
 * session cookie and the cross-site check (src/portal/app.ts). The consumer always comes from the
 * session, never from the request; a key of another consumer is answered 404 as if it did not exist.
 * Every change and every usage read is the management operation's own (src/portal/management-call.ts).
 */
import { AppError } from '../../errors.js';
import { mintToken } from '../../keys/mint-token.js';
import { decryptSecret, maskSecret } from '../../keys/secret.js';
import { MAX_TOKEN_LENGTH } from '../../keys/token.js';
import type { ManagementContext } from '../../management/context.js';
import { defineOperation } from '../../management/operation.js';
import { keyListPage } from '../../management/resources/keys/list-sort.js';
import { ConsumerUsageResponse, KeyUsageResponse } from '../../management/resources/usage/schemas.js';
import { FailuresResponse } from '../../management/resources/failures/schemas.js';
import { MAX_PAGE_SIZE } from '../../management/schemas.js';
import { isoTimestamp } from '../../management/time-format.js';
import type { KeyRow } from '../../store/key-row.js';
import type { PortalSessionRow } from '../../store/portal-session-repository.js';
import { answeredBy, resultOf } from '../management-call.js';
import { oneAtATime } from '../one-at-a-time.js';
import { portalCallOf } from '../portal-session.js';
import { csrfTokenOf, SESSION_COOKIE, setPortalCookie } from '../session-cookie.js';
import { overHttps } from '../../management/resources/developer-portal/portal-origin.js';
import { brandingOf } from './branding.js';
import { portalPlanOperations } from './plan-operations.js';
import { portalReferenceOperation } from './reference-operation.js';
import {
  CreatePortalKeyRequest,
  CreatePortalKeyResponse,
  DEFAULT_TOKEN_SECONDS,
  DeletePortalKeyResponse,
  Me,
  MintPortalTokenRequest,
  MintPortalTokenResponse,
  PortalKey,
  PortalKeyList,
  PortalKeyParams,
  RollPortalKeyRequest,
  RollPortalKeyResponse,
  SignOutResponse,
  UpdatePortalKeyRequest,
} from './schemas.js';

const TAG = 'Portal';
const KEY_NOT_FOUND = { key_not_found: 'The consumer has no key with that id' } as const;
const keyParams = { schema: PortalKeyParams, notFound: 'key_not_found' } as const;

const isoOrNull = (instant: Date | null): string | null => (instant === null ? null : isoTimestamp(instant));

/** A key as its portal user sees it: the secret masked to its own prefix and its last 4 characters. */
function portalKeyView(key: KeyRow, ctx: ManagementContext): PortalKey {
  const previous = key.previousSecretExpiresAt;
  return {
    id: key.id,
    name: key.name,
    createdAt: isoTimestamp(key.createdAt),
    lastUsedAt: isoOrNull(key.lastUsedAt),
    enabled: key.enabled,
    disabledByAdministrator: !key.enabled && !key.disabledInPortal,
    expiresAt: isoOrNull(key.expiresAt),
    allowedOrigins: key.allowedOrigins && [...key.allowedOrigins],
    allowedAddresses: key.allowedAddresses && [...key.allowedAddresses],
    maskedSecret: maskSecret(decryptSecret(key.secretCiphertext, ctx.encryptionKeys)),
    ...(previous !== null && previous > ctx.now() && { previousSecretExpiresAt: isoTimestamp(previous) }),
    leak: key.leak,
  };
}

/** The session's own key, or 404 key_not_found whether it is another consumer's or nobody's. */
async function ownKey(session: PortalSessionRow, keyId: string, ctx: ManagementContext): Promise<KeyRow> {
  const key = await ctx.keys.get(keyId);
  if (!key || key.consumerId !== session.consumerId) throw new AppError('key_not_found');
  return key;
}

/** A key read's query, narrowed to what the key did while it was the session's consumer's (a moved key's past stays with its consumer then). */
const whileOwn = (query: object, session: PortalSessionRow) => ({ ...query, consumerId: session.consumerId });

const createKey = resultOf('createConsumerApiKey');
const updateKey = resultOf('updateConsumerApiKey');
const rollKey = resultOf('rollConsumerApiKey');
const deleteKey = resultOf('deleteConsumerApiKey');
const endSession = resultOf('deletePortalSession');
const consumerUsage = answeredBy('getConsumerUsage');
const keyUsage = answeredBy('getConsumerApiKeyUsage');
const consumerFailures = answeredBy('listConsumerFailures');
const keyFailures = answeredBy('listConsumerApiKeyFailures');

export const portalApiOperations = [
  defineOperation({
    id: 'portalMe',
    method: 'get',
    path: '/me',
    scope: null,
    tag: TAG,
    summary: 'The signed-in user, their consumer, the CSRF token of the session and the branding',
    success: { status: 200, description: 'The session', schema: Me },
    async handle({ res, ctx }) {
      const { session, token } = portalCallOf(res);
      const [consumer, stored] = await Promise.all([ctx.consumers.get(session.consumerId), ctx.portal.get()]);
      if (!consumer) throw new AppError('not_signed_in');
      const answer: Me = {
        user: { ...session.user },
        consumer: { id: consumer.id, name: consumer.name },
        expiresAt: isoTimestamp(session.expiresAt),
        csrfToken: csrfTokenOf(token),
        branding: brandingOf(stored, ctx.prefix),
      };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'portalSignOut',
    method: 'post',
    path: '/sign-out',
    scope: null,
    tag: TAG,
    summary: 'End the session, on every replica, and clear its cookie',
    success: { status: 200, description: 'Signed out', schema: SignOutResponse },
    async handle({ req, res, ctx }) {
      const { session } = portalCallOf(res);
      await endSession({ params: { sessionId: session.id } }, res, ctx);
      setPortalCookie(res, SESSION_COOKIE, '', 0, {
        prefix: ctx.prefix,
        secure: overHttps(req, ctx.trustProxy),
      });
      res.json({ message: 'Signed out' });
    },
  }),

  defineOperation({
    id: 'portalListKeys',
    method: 'get',
    path: '/keys',
    scope: null,
    tag: TAG,
    summary: "The consumer's keys, oldest first, their secrets masked",
    success: { status: 200, description: 'The keys', schema: PortalKeyList },
    async handle({ res, ctx }) {
      const { session } = portalCallOf(res);
      const { order } = keyListPage('createdAt', undefined, ctx.clock());
      const [keys, { settings }] = await Promise.all([
        ctx.keys.list({ consumerId: session.consumerId }, order, undefined, MAX_PAGE_SIZE),
        ctx.portal.get(),
      ]);
      const answer: PortalKeyList = {
        keys: keys.map((key) => portalKeyView(key, ctx)),
        maxKeys: settings.maxKeysPerConsumer,
      };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'portalCreateKey',
    method: 'post',
    path: '/keys',
    scope: null,
    tag: TAG,
    summary: 'Create a key of the consumer: its secret is in this answer only',
    body: { schema: CreatePortalKeyRequest },
    success: { status: 201, description: 'Created', schema: CreatePortalKeyResponse },
    errors: { key_limit_reached: 'The consumer holds maxKeysPerConsumer keys already' },
    async handle({ body, res, ctx }) {
      const { consumerId } = portalCallOf(res).session;
      const { settings } = await ctx.portal.get();
      const created = await oneAtATime(`portal-key-create:${consumerId}`, ctx, async () => {
        const held = await ctx.keys.count({ consumerId }, settings.maxKeysPerConsumer + 1);
        if (held >= settings.maxKeysPerConsumer) throw new AppError('key_limit_reached');
        return createKey({ body: { ...body, consumerId } }, res, ctx);
      });
      const { id, secret } = created as { id: string; secret: string };
      const key = (await ctx.keys.get(id))!;
      const answer: CreatePortalKeyResponse = { ...portalKeyView(key, ctx), secret };
      res.status(201).json(answer);
    },
  }),

  defineOperation({
    id: 'portalGetKey',
    method: 'get',
    path: '/keys/:keyId',
    scope: null,
    tag: TAG,
    summary: 'One key of the consumer',
    params: keyParams,
    success: { status: 200, description: 'The key', schema: PortalKey },
    errors: KEY_NOT_FOUND,
    async handle({ params, res, ctx }) {
      res.json(portalKeyView(await ownKey(portalCallOf(res).session, params.keyId, ctx), ctx));
    },
  }),

  defineOperation({
    id: 'portalUpdateKey',
    method: 'patch',
    path: '/keys/:keyId',
    scope: null,
    tag: TAG,
    summary: 'Rename, disable or enable a key (one you disabled), or set its origins or addresses',
    params: keyParams,
    body: { schema: UpdatePortalKeyRequest },
    success: { status: 200, description: 'The key as it now is', schema: PortalKey },
    errors: {
      ...KEY_NOT_FOUND,
      disabled_by_administrator: 'Enabling a key an administrator disabled (only they can enable it)',
    },
    async handle({ params: { keyId }, body, res, ctx }) {
      await ownKey(portalCallOf(res).session, keyId, ctx);
      await updateKey({ params: { consumerApiKeyId: keyId }, body }, res, ctx);
      res.json(portalKeyView((await ctx.keys.get(keyId))!, ctx));
    },
  }),

  defineOperation({
    id: 'portalRollKey',
    method: 'post',
    path: '/keys/:keyId/roll',
    scope: null,
    tag: TAG,
    summary: 'Give a key a new secret, the previous one working up to 24 h more',
    params: keyParams,
    body: { schema: RollPortalKeyRequest, optional: true },
    success: { status: 200, description: 'Rolled', schema: RollPortalKeyResponse },
    errors: KEY_NOT_FOUND,
    async handle({ params: { keyId }, body, res, ctx }) {
      await ownKey(portalCallOf(res).session, keyId, ctx);
      const rolled = await rollKey({ params: { consumerApiKeyId: keyId }, body }, res, ctx);
      const { secret, previousSecretExpiresAt } = rolled as RollPortalKeyResponse;
      const answer: RollPortalKeyResponse = { id: keyId, secret, previousSecretExpiresAt };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'portalMintToken',
    method: 'post',
    path: '/keys/:keyId/tokens',
    scope: null,
    tag: TAG,
    summary: 'Mint a short-lived token of a key, for trying the API: the token is in this answer only',
    description:
      "Signed with the key's current secret (docs/guides/browser.md); it is the key, narrowed, until `expiresAt`. The audit log records the minting, never the token.",
    params: keyParams,
    body: { schema: MintPortalTokenRequest, optional: true },
    success: { status: 201, description: 'Minted', schema: MintPortalTokenResponse },
    errors: { ...KEY_NOT_FOUND, key_not_usable: 'The key is disabled or expired' },
    async handle({ params: { keyId }, body, res, ctx }) {
      const key = await ownKey(portalCallOf(res).session, keyId, ctx);
      const now = ctx.now();
      if (!key.enabled)
        throw new AppError('key_not_usable', 'The key is disabled: enable it to mint a token of it');
      if (key.expiresAt !== null && key.expiresAt <= now)
        throw new AppError('key_not_usable', 'The key has expired: a token of it would be refused');
      const { expiresInSeconds = DEFAULT_TOKEN_SECONDS, origins, routes, subject } = body ?? {};
      const token = mintToken(decryptSecret(key.secretCiphertext, ctx.encryptionKeys), {
        consumerApiKeyId: keyId,
        expiresInSeconds,
        nowMs: now.getTime(),
        ...(subject !== undefined && { subject }),
        ...(origins !== undefined && { origins }),
        ...(routes !== undefined && { routes }),
      });
      if (token.length > MAX_TOKEN_LENGTH)
        throw new AppError(
          'validation_failed',
          `The token would be longer than ${MAX_TOKEN_LENGTH} characters, which no gateway accepts: name fewer origins or routes`,
        );
      const expiresAt = isoTimestamp(
        new Date((Math.floor(now.getTime() / 1_000) + expiresInSeconds) * 1_000),
      );
      await ctx.audited(res, async () => ({
        result: undefined,
        action: 'key.mint_token',
        target: { type: 'key', id: keyId },
        before: null,
        // What the token allows; the token itself is written nowhere.
        after: { expiresAt, subject: subject ?? null, origins: origins ?? null, routes: routes ?? null },
      }));
      const answer: MintPortalTokenResponse = { token, expiresAt };
      res.status(201).json(answer);
    },
  }),

  defineOperation({
    id: 'portalDeleteKey',
    method: 'delete',
    path: '/keys/:keyId',
    scope: null,
    tag: TAG,
    summary: 'Delete a key (its usage stays, counted for the consumer)',
    params: keyParams,
    success: { status: 200, description: 'Deleted', schema: DeletePortalKeyResponse },
    errors: KEY_NOT_FOUND,
    async handle({ params: { keyId }, res, ctx }) {
      await ownKey(portalCallOf(res).session, keyId, ctx);
      await deleteKey({ params: { consumerApiKeyId: keyId } }, res, ctx);
      const answer: DeletePortalKeyResponse = { id: keyId, message: `Key ${keyId} has been deleted` };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'portalConsumerUsage',
    method: 'get',
    path: '/usage',
    scope: null,
    tag: TAG,
    summary: "The consumer's usage over time (the management API's, CSV too)",
    success: { status: 200, description: 'The buckets', schema: ConsumerUsageResponse, csv: true },
    async handle({ req, res, ctx }) {
      const { session } = portalCallOf(res);
      await consumerUsage({ params: { consumerId: session.consumerId }, query: { ...req.query } }, res, ctx);
    },
  }),

  defineOperation({
    id: 'portalKeyUsage',
    method: 'get',
    path: '/keys/:keyId/usage',
    scope: null,
    tag: TAG,
    summary: "A key's usage over time (the management API's, CSV too)",
    params: keyParams,
    success: { status: 200, description: 'The buckets', schema: KeyUsageResponse, csv: true },
    errors: KEY_NOT_FOUND,
    async handle({ params: { keyId }, req, res, ctx }) {
      const { session } = portalCallOf(res);
      await ownKey(session, keyId, ctx);
      await keyUsage({ params: { consumerApiKeyId: keyId }, query: whileOwn(req.query, session) }, res, ctx);
    },
  }),

  defineOperation({
    id: 'portalConsumerFailures',
    method: 'get',
    path: '/failures',
    scope: null,
    tag: TAG,
    summary: "The consumer's failed requests, newest first (the management API's, CSV too)",
    success: { status: 200, description: 'One page of failures', schema: FailuresResponse, csv: true },
    async handle({ req, res, ctx }) {
      const { session } = portalCallOf(res);
      await consumerFailures(
        { params: { consumerId: session.consumerId }, query: { ...req.query } },
        res,
        ctx,
      );
    },
  }),

  defineOperation({
    id: 'portalKeyFailures',
    method: 'get',
    path: '/keys/:keyId/failures',
    scope: null,
    tag: TAG,
    summary: "A key's failed requests, newest first (CSV too)",
    params: keyParams,
    success: { status: 200, description: 'One page of failures', schema: FailuresResponse, csv: true },
    errors: KEY_NOT_FOUND,
    async handle({ params: { keyId }, req, res, ctx }) {
      const { session } = portalCallOf(res);
      await ownKey(session, keyId, ctx);
      await keyFailures(
        { params: { consumerApiKeyId: keyId }, query: whileOwn(req.query, session) },
        res,
        ctx,
      );
    },
  }),

  ...portalPlanOperations,
  portalReferenceOperation,
];
