/** Consumer API keys: create, list, show, change, roll, delete (docs/guides/keys.md). */
import { isDeepStrictEqual } from 'node:util';
import type { Response } from 'express';
import { AppError } from '../../../errors.js';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../../../keys/secret.js';
import type { ConsumerRepository } from '../../../store/consumer-repository.js';
import type { KeyRow, KeySettings } from '../../../store/key-row.js';
import { keyAudit } from '../../audit-views.js';
import { callerOf } from '../../authenticate.js';
import type { ManagementContext } from '../../context.js';
import type { Credits } from '../credits/balance-schemas.js';
import {
  balanceOfInput,
  heldCredits,
  keyCredits,
  recordedCredits,
  setsCredits,
  syncCredits,
} from '../credits/views.js';
import { metadataAsWritten } from '../../json-body.js';
import { RawJson, sendJson } from '../../json-as-written.js';
import { keySummary, keyView, keyState, type WithRawMetadata } from './views.js';
import { withWhoDisabled } from './portal-disabling.js';
import { KEY_NOT_FOUND, keyParams, TAG } from './key-params.js';
import { rollKeyOperation } from './roll-operation.js';
import { defineOperation } from '../../operation.js';
import { keyListCursor, keyListPage } from './list-sort.js';
import { pageWithCursor } from '../../pages.js';
import { checkRouteReferences } from '../routes/references.js';
import { keySubjects, rateLimitsOf } from '../plans/rate-limit-views.js';
import {
  CreateKeyRequest,
  CreateKeyResponse,
  DeleteKeyResponse,
  KeyDetailResponse,
  KeyResponse,
  ListKeysQuery,
  ListKeysResponse,
  MAX_COUNTED_KEYS,
  type UpdateKeyRequest,
  UpdateKeyRequest as UpdateKeyRequestSchema,
} from './schemas.js';
import { DEFAULT_PAGE_SIZE } from '../../schemas.js';
import { createTimestamp } from '../../time-format.js';
import { keySettingProblems, parseTimestamp } from '../../validation.js';

const KEYS_PATH = '/consumer-api-key';
const KEY_PATH = '/consumer-api-key/:consumerApiKeyId';
const CONSUMER_NOT_FOUND = { consumer_not_found: '`consumerId` names no consumer' } as const;

/**
 * The settings a validated body names, in the repository's terms (a validated timestamp always
 * parses); `metadata` as the caller wrote it, read from the body's text, so it is returned as given.
 */
function settingsOf(input: UpdateKeyRequest, res: Response): Partial<KeySettings> {
  return {
    ...(input.name !== undefined && { name: input.name }),
    ...(input.enabled !== undefined && { enabled: input.enabled }),
    ...(input.externalId !== undefined && { externalId: input.externalId }),
    ...(input.metadata !== undefined && { metadata: metadataAsWritten(input.metadata, res) }),
    ...(input.expiresAt !== undefined && {
      expiresAt: input.expiresAt === null ? null : parseTimestamp(input.expiresAt)!,
    }),
    ...(input.consumerId !== undefined && { consumerId: input.consumerId }),
    ...(input.allowedRouteIds !== undefined && { allowedRouteIds: input.allowedRouteIds }),
    ...(input.allowedOrigins !== undefined && { allowedOrigins: input.allowedOrigins }),
    ...(input.allowedAddresses !== undefined && { allowedAddresses: input.allowedAddresses }),
  };
}

/**
 * 404 consumer_not_found unless the consumer a key is given exists; inside the transaction, it is then
 * kept from being deleted until the key is stored.
 */
async function checkConsumer(
  consumerId: string | null | undefined,
  consumers: ConsumerRepository,
): Promise<void> {
  if (consumerId && !(await consumers.get(consumerId, 'key share'))) throw new AppError('consumer_not_found');
}

/** Whether every setting named already has that value (metadata compared as the text stored). */
function changesNothing(key: KeyRow, changes: Partial<KeySettings>): boolean {
  return Object.entries(changes).every(([field, value]) =>
    isDeepStrictEqual(key[field as keyof KeySettings], value),
  );
}

/** A key as its caller may see it, its balance holding `credits`: the secret only with `keys:secrets` (docs/guides/admin-tokens-and-audit.md, Scopes). */
function visibleKey(
  key: KeyRow,
  credits: Credits | null,
  res: Response,
  ctx: ManagementContext,
): WithRawMetadata<KeyResponse> {
  const view = keyView(key, credits, ctx.encryptionKeys, ctx.now());
  if (callerOf(res).scopes.has('keys:secrets')) return view;
  const { secret: _secret, ...withoutSecret } = view;
  return withoutSecret as WithRawMetadata<KeyResponse>;
}

export const keyOperations = [
  defineOperation({
    id: 'createConsumerApiKey',
    method: 'post',
    path: '/consumer-api-key/create',
    scope: 'keys:write',
    tag: TAG,
    summary: 'Create a consumer API key',
    description:
      'Generates the secret. `createdAt` is `YYYY-MM-DD HH:MM:SS` (UTC) in this response only. `credits` gives the key a prepaid balance of its own, which its requests spend besides any of its consumer.',
    body: { schema: CreateKeyRequest, check: keySettingProblems },
    success: {
      status: 201,
      description: 'Created',
      schema: CreateKeyResponse,
      headers: { Location: 'Path of the key detail' },
    },
    errors: { rate_limit_not_found: '`rateLimitId` names no plan', ...CONSUMER_NOT_FOUND },
    async handle({ body: input, res, ctx }) {
      const rateLimitId = input.rateLimitId ?? null;
      const settings = {
        enabled: true,
        externalId: null,
        metadata: '{}',
        expiresAt: null,
        consumerId: null,
        allowedRouteIds: null,
        allowedOrigins: null,
        allowedAddresses: null,
        ...settingsOf(input, res),
        name: input.name,
      };
      const id = generateKeyId();
      const secret = generateSecret(ctx.leaks.keyPrefix);
      const createdAt = ctx.now();
      const balance = input.credits ? balanceOfInput(input.credits, null, 0, createdAt.getTime()) : null;
      const credits = balance && recordedCredits(balance, createdAt.getTime());
      const key = await ctx.audited(res, async ({ keys, plans, consumers, routes, credits: balances }) => {
        await checkRouteReferences([['allowedRouteIds', settings.allowedRouteIds]], routes);
        if (rateLimitId !== null && !(await plans.get(rateLimitId)))
          throw new AppError('rate_limit_not_found');
        await checkConsumer(settings.consumerId, consumers);
        await keys.insert({
          ...settings,
          id,
          secretHash: hashSecret(secret),
          secretCiphertext: encryptSecret(secret, ctx.sealingKey),
          rateLimitId,
          createdAt,
        });
        if (balance !== null) await balances.set('key', id, balance, balance.epoch, createdAt);
        const created = (await keys.get(id))!;
        return {
          result: created,
          action: 'key.create',
          target: { type: 'key', id },
          before: null,
          after: { ...keyAudit(created), ...(credits && { credits }) },
        };
      });
      const body: WithRawMetadata<CreateKeyResponse> = {
        id,
        name: key.name,
        secret,
        createdAt: createTimestamp(createdAt),
        ...keyState(key),
        metadata: new RawJson(key.metadata),
        credits,
      };
      sendJson(res.status(201).location(`${ctx.prefix}${KEYS_PATH}/${id}`), body);
    },
  }),

  defineOperation({
    id: 'listConsumerApiKeys',
    method: 'get',
    path: KEYS_PATH,
    scope: 'keys:read',
    tag: TAG,
    summary: 'List consumer API keys, oldest first or in the order `sort` names',
    description:
      'Lists never carry secrets. `name` finds keys by the start of their name whatever its case; `count=true` adds how many keys match.',
    query: { schema: ListKeysQuery },
    success: { status: 200, description: 'One page of keys', schema: ListKeysResponse },
    async handle({ query, res, ctx }) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const sort = query.sort ?? 'createdAt';
      const { order, after } = keyListPage(sort, query.cursor, ctx.clock());
      const [rows, counted] = await Promise.all([
        ctx.keys.list(query, order, after, limit + 1),
        query.count ? ctx.keys.count(query, MAX_COUNTED_KEYS + 1) : undefined,
      ]);
      const { items, nextCursor } = pageWithCursor(rows, limit, (k) => keyListCursor(sort, order, k));
      const body: ListKeysResponse = {
        apiKeys: items.map(keySummary),
        ...(nextCursor !== undefined && { nextCursor }),
        ...(counted !== undefined && {
          total: { count: Math.min(counted, MAX_COUNTED_KEYS), exact: counted <= MAX_COUNTED_KEYS },
        }),
      };
      res.json(body);
    },
  }),

  defineOperation({
    id: 'getConsumerApiKey',
    method: 'get',
    path: KEY_PATH,
    scope: 'keys:read',
    tag: TAG,
    summary: 'Show a key with its usage, its credits (and its secret, with keys:secrets)',
    description:
      "Usage shows a proxied request within 2 s, whichever replica served it. `usage.rateLimits` and `credits` are read without consuming quota; `credits` is the key's own balance (its consumer's shows on the consumer). `secret` is present only for callers holding `keys:secrets`.",
    params: keyParams,
    success: { status: 200, description: 'The key', schema: KeyDetailResponse },
    errors: { ...KEY_NOT_FOUND, limit_unavailable: 'The rate limiter is unavailable; retry later' },
    async handle({ params, res, ctx }) {
      const key = await ctx.keys.get(params.consumerApiKeyId);
      if (!key) throw new AppError('key_not_found');
      const subjects = await keySubjects(key, ctx);
      const [totals, rateLimits, credits] = await Promise.all([
        ctx.usage.read(key.id),
        rateLimitsOf(subjects, ctx),
        heldCredits(ctx, subjects, 'key'),
      ]);
      const body: WithRawMetadata<KeyDetailResponse> = {
        ...visibleKey(key, credits, res, ctx),
        usage: {
          totalRequests: totals.totalRequests,
          successfulRequests: totals.successfulRequests,
          failedRequests: totals.failedRequests,
          cost: totals.cost,
          unsettled: totals.unsettled,
          rateLimits,
          endpoints: totals.endpoints,
          usageByCustomer: totals.usageByCustomer,
          ...(totals.usageByCustomerNotListed && {
            usageByCustomerNotListed: totals.usageByCustomerNotListed,
          }),
        },
      };
      sendJson(res, body);
    },
  }),

  defineOperation({
    id: 'updateConsumerApiKey',
    method: 'patch',
    path: KEY_PATH,
    scope: 'keys:write',
    tag: TAG,
    summary: 'Change a key: name, owner, metadata, enabled, expiry, consumer, allowed routes, credits',
    description:
      'Any of the fields; `null` clears `externalId`, `expiresAt`, `consumerId`, `allowedRouteIds` (every route), `allowedOrigins` and `allowedAddresses` (anywhere) and `credits`, and sets `metadata` to `{}`. Moving a key to another consumer moves none of its history. `credits` sets the balance afresh (what was spent before no longer counts), in force for the next request on every replica; to add to it, use `POST /tollgate/credits`. Other changes take effect on every replica within 1 s and move `lastUpdated`; a body that sets only what the key already has changes nothing (no audit entry, `lastUpdated` stays). The answer carries `secret` only for callers holding `keys:secrets`.',
    params: keyParams,
    body: { schema: UpdateKeyRequestSchema, check: keySettingProblems },
    success: {
      status: 200,
      description: 'The key as it now is (the detail without `usage`)',
      schema: KeyResponse,
    },
    errors: { ...KEY_NOT_FOUND, ...CONSUMER_NOT_FOUND },
    async handle({ params, body, res, ctx }) {
      const id = params.consumerApiKeyId;
      const changes = settingsOf(body, res);
      // What the balance held, for the audit entry: read before the change (the limiter is not in the transaction).
      const current = body.credits === undefined ? undefined : await ctx.keys.get(id);
      const creditsBefore = current && (await keyCredits(current, ctx));
      const { key, changed } = await ctx.audited(res, async ({ keys, consumers, routes, credits }) => {
        const before = await keys.get(id, true);
        if (!before) throw new AppError('key_not_found');
        await checkRouteReferences([['allowedRouteIds', changes.allowedRouteIds]], routes);
        if (changes.consumerId !== before.consumerId) await checkConsumer(changes.consumerId, consumers);
        const ruled = withWhoDisabled(before, changes, callerOf(res).actor.type === 'portal');
        // Setting what is already set changes nothing: no entry, and lastUpdated stays.
        const settingCredits = setsCredits(before.balance, body.credits);
        if (changesNothing(before, ruled) && !settingCredits)
          return { result: { key: before, changed: false }, unchanged: true as const };
        const now = ctx.now();
        if (settingCredits) {
          const balance = balanceOfInput(body.credits!, before.balance, before.creditsEpoch, now.getTime());
          await credits.set('key', id, balance, balance?.epoch ?? before.creditsEpoch, now);
        }
        const after = (await keys.update(id, ruled, now))!;
        const creditsAfter = after.balance && recordedCredits(after.balance, now.getTime());
        return {
          result: { key: after, changed: true },
          action: 'key.update',
          target: { type: 'key', id },
          before: { ...keyAudit(before), ...(settingCredits && { credits: creditsBefore ?? null }) },
          after: { ...keyAudit(after), ...(settingCredits && { credits: creditsAfter }) },
        };
      });
      if (changed) await ctx.announce({ kind: 'key', keyId: id });
      if (changed && body.credits !== undefined) await syncCredits(ctx, await keySubjects(key, ctx));
      sendJson(res, visibleKey(key, await keyCredits(key, ctx), res, ctx));
    },
  }),

  defineOperation({
    id: 'deleteConsumerApiKey',
    method: 'delete',
    path: KEY_PATH,
    scope: 'keys:write',
    tag: TAG,
    summary: 'Delete a key (its usage stays, counted for its consumer, the fleet and billing)',
    params: keyParams,
    success: { status: 200, description: 'Deleted', schema: DeleteKeyResponse },
    errors: KEY_NOT_FOUND,
    async handle({ params, res, ctx }) {
      const id = params.consumerApiKeyId;
      await ctx.audited(res, async ({ keys }) => {
        const before = await keys.get(id, true);
        if (!before || !(await keys.delete(id, ctx.now()))) throw new AppError('key_not_found');
        return {
          result: undefined,
          action: 'key.delete',
          target: { type: 'key', id },
          before: keyAudit(before),
          after: null,
        };
      });
      await ctx.announce({ kind: 'key', keyId: id });
      const body: DeleteKeyResponse = {
        consumerApiKeyId: id,
        message: `Consumer API key ${id} has been deleted`,
      };
      res.json(body);
    },
  }),

  rollKeyOperation,
];
