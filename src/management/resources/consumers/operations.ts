/** Consumers: the accounts that hold keys and share one plan among them (docs/guides/consumers.md). */
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { Response } from 'express';
import { AppError } from '../../../errors.js';
import type { ConsumerRow, ConsumerSettings } from '../../../store/consumer-repository.js';
import { consumerAudit, keyAudit } from '../../audit-views.js';
import type { Credits } from '../credits/balance-schemas.js';
import {
  balanceOfInput,
  consumerCredits,
  consumerSubjects,
  recordedCredits,
  setsCredits,
  syncCredits,
} from '../credits/views.js';
import { isUniqueViolation } from '../../db-errors.js';
import { RawJson, sendJson } from '../../json-as-written.js';
import { metadataAsWritten } from '../../json-body.js';
import type { WithRawMetadata } from '../keys/views.js';
import { defineOperation } from '../../operation.js';
import { pageOf, positionAfter } from '../../pages.js';
import { boundPlan, rateLimitsOf } from '../plans/rate-limit-views.js';
import {
  ConsumerDetailResponse,
  ConsumerResponse,
  CreateConsumerRequest,
  DeleteConsumerQuery,
  DeleteConsumerResponse,
  ListConsumersQuery,
  ListConsumersResponse,
  UpdateConsumerRequest,
} from './schemas.js';
import { ConsumerId, DEFAULT_PAGE_SIZE } from '../../schemas.js';
import { isoTimestamp } from '../../time-format.js';
import { consumerSettingProblems } from '../../validation.js';

const TAG = 'Consumers';
const CONSUMERS_PATH = '/tollgate/consumers';
const CONSUMER_PATH = '/tollgate/consumers/:consumerId';
const consumerParams = {
  schema: Type.Object({ consumerId: { ...ConsumerId, description: 'The consumer id' } }),
  notFound: 'consumer_not_found',
} as const;
const CONSUMER_NOT_FOUND = { consumer_not_found: 'No consumer has that id' } as const;
const EXTERNAL_ID_TAKEN = { consumer_exists: 'Another consumer has that `externalId`' } as const;

const generateConsumerId = (): string => 'con_' + randomBytes(16).toString('base64url');

/** The settings a validated body names, in the repository's terms; `metadata` as the caller wrote it. */
function settingsOf(input: UpdateConsumerRequest, res: Response): Partial<ConsumerSettings> {
  return {
    ...(input.name !== undefined && { name: input.name }),
    ...(input.externalId !== undefined && { externalId: input.externalId }),
    ...(input.metadata !== undefined && { metadata: metadataAsWritten(input.metadata, res) }),
    ...(input.rateLimitId !== undefined && { rateLimitId: input.rateLimitId }),
  };
}

/** A write that may give a consumer an `externalId` another one has: 409 consumer_exists. */
async function withExternalId<T>(externalId: string | null | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err))
      throw new AppError('consumer_exists', `Another consumer has the externalId "${externalId}"`);
    throw err;
  }
}

/** A consumer as every answer shows it, its balance holding `credits`. */
function consumerView(consumer: ConsumerRow, credits: Credits | null): WithRawMetadata<ConsumerResponse> {
  return {
    consumerId: consumer.id,
    name: consumer.name,
    externalId: consumer.externalId,
    metadata: new RawJson(consumer.metadata),
    rateLimitId: consumer.rateLimitId,
    keyCount: consumer.keyCount,
    credits,
    createdAt: isoTimestamp(consumer.createdAt),
    lastUpdated: isoTimestamp(consumer.lastUpdated),
  };
}

export const consumerOperations = [
  defineOperation({
    id: 'createConsumer',
    method: 'post',
    path: CONSUMERS_PATH,
    scope: 'keys:write',
    tag: TAG,
    summary: 'Create a consumer, the account that holds keys',
    description:
      "A plan bound to a consumer is shared by all its keys, exactly, across replicas, on top of each key's own plan, and so are its `credits`. `externalId` is unique among consumers; `metadata` is kept as a key's.",
    body: { schema: CreateConsumerRequest, check: consumerSettingProblems },
    success: {
      status: 201,
      description: 'Created',
      schema: ConsumerResponse,
      headers: { Location: 'Path of the consumer detail' },
    },
    errors: { rate_limit_not_found: '`rateLimitId` names no plan', ...EXTERNAL_ID_TAKEN },
    async handle({ body, res, ctx }) {
      const settings: ConsumerSettings = {
        externalId: null,
        metadata: '{}',
        rateLimitId: null,
        ...settingsOf(body, res),
        name: body.name,
      };
      const id = generateConsumerId();
      const createdAt = ctx.now();
      const balance = body.credits ? balanceOfInput(body.credits, null, 0, createdAt.getTime()) : null;
      const credits = balance && recordedCredits(balance, createdAt.getTime());
      const consumer = await ctx.audited(res, async ({ consumers, plans, credits: balances }) => {
        if (settings.rateLimitId !== null && !(await plans.get(settings.rateLimitId)))
          throw new AppError('rate_limit_not_found');
        await withExternalId(settings.externalId, () => consumers.insert({ ...settings, id, createdAt }));
        if (balance !== null) await balances.set('consumer', id, balance, balance.epoch, createdAt);
        const created = (await consumers.get(id))!;
        return {
          result: created,
          action: 'consumer.create',
          target: { type: 'consumer', id },
          before: null,
          after: { ...consumerAudit(created), ...(credits && { credits }) },
        };
      });
      sendJson(
        res.status(201).location(`${ctx.prefix}${CONSUMERS_PATH}/${id}`),
        consumerView(consumer, credits),
      );
    },
  }),

  defineOperation({
    id: 'listConsumers',
    method: 'get',
    path: CONSUMERS_PATH,
    scope: 'keys:read',
    tag: TAG,
    summary: 'List consumers, oldest first',
    query: { schema: ListConsumersQuery },
    success: { status: 200, description: 'One page of consumers', schema: ListConsumersResponse },
    async handle({ query, res, ctx }) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const rows = await ctx.consumers.list(query, positionAfter(query.cursor), limit + 1);
      const { items, nextCursor } = pageOf(rows, limit, (c) => ({ at: c.createdAt.getTime(), id: c.id }));
      const credits = await Promise.all(items.map((consumer) => consumerCredits(consumer, ctx)));
      sendJson(res, {
        consumers: items.map((consumer, i) => consumerView(consumer, credits[i]!)),
        ...(nextCursor !== undefined && { nextCursor }),
      });
    },
  }),

  defineOperation({
    id: 'getConsumer',
    method: 'get',
    path: CONSUMER_PATH,
    scope: 'keys:read',
    tag: TAG,
    summary: 'Show a consumer with its usage, its credits and where its shared limits stand',
    description:
      "`usage` is what its keys did while they belonged to it (a request shows within 2 s; moving a key moves none of its history). `usage.rateLimits` and `credits` are read without consuming quota: the consumer's plan and balance, counted over all its keys on every replica.",
    params: consumerParams,
    success: { status: 200, description: 'The consumer', schema: ConsumerDetailResponse },
    errors: { ...CONSUMER_NOT_FOUND, limit_unavailable: 'The rate limiter is unavailable; retry later' },
    async handle({ params, res, ctx }) {
      const consumer = await ctx.consumers.get(params.consumerId);
      if (!consumer) throw new AppError('consumer_not_found');
      const plan = await boundPlan(consumer.rateLimitId, ctx);
      const [totals, rateLimits, credits] = await Promise.all([
        ctx.keys.idsOfConsumer(consumer.id).then((keyIds) => ctx.usage.readConsumer(consumer.id, keyIds)),
        rateLimitsOf(plan && [{ scope: 'consumer', id: consumer.id, plan }], ctx),
        consumerCredits(consumer, ctx),
      ]);
      const { usageByCustomerNotListed, ...listed } = totals;
      const body: WithRawMetadata<ConsumerDetailResponse> = {
        ...consumerView(consumer, credits),
        usage: { ...listed, rateLimits, ...(usageByCustomerNotListed && { usageByCustomerNotListed }) },
      };
      sendJson(res, body);
    },
  }),

  defineOperation({
    id: 'updateConsumer',
    method: 'patch',
    path: CONSUMER_PATH,
    scope: 'keys:write',
    tag: TAG,
    summary: 'Change a consumer: name, owner, metadata, plan, credits',
    description:
      'Any of the fields; `null` clears `externalId`, unbinds the plan (`rateLimitId`), removes `credits` and sets `metadata` to `{}`. A new plan takes effect for all its keys on every replica within 1 s, keeping what the current windows have spent. `credits` sets the balance afresh (what was spent before no longer counts), in force for the next request of any of its keys on every replica; to add to it, use `POST /tollgate/credits`. A body that sets only what the consumer already has changes nothing (no audit entry, `lastUpdated` stays).',
    params: consumerParams,
    body: { schema: UpdateConsumerRequest, check: consumerSettingProblems },
    success: { status: 200, description: 'The consumer as it now is', schema: ConsumerResponse },
    errors: {
      ...CONSUMER_NOT_FOUND,
      rate_limit_not_found: '`rateLimitId` names no plan',
      ...EXTERNAL_ID_TAKEN,
    },
    async handle({ params: { consumerId }, body, res, ctx }) {
      const changes = settingsOf(body, res);
      // What the balance held, for the audit entry: read before the change (the limiter is not in the transaction).
      const current = body.credits === undefined ? undefined : await ctx.consumers.get(consumerId);
      const creditsBefore = current && (await consumerCredits(current, ctx));
      const { consumer, changed } = await ctx.audited(res, async ({ consumers, plans, credits }) => {
        const before = await consumers.get(consumerId, 'update');
        if (!before) throw new AppError('consumer_not_found');
        if (
          changes.rateLimitId &&
          changes.rateLimitId !== before.rateLimitId &&
          !(await plans.get(changes.rateLimitId))
        )
          throw new AppError('rate_limit_not_found');
        // Setting what is already set changes nothing: no entry, and lastUpdated stays.
        const settingCredits = setsCredits(before.balance, body.credits);
        if (
          !settingCredits &&
          Object.entries(changes).every(([field, value]) => before[field as keyof ConsumerSettings] === value)
        ) {
          return { result: { consumer: before, changed: false }, unchanged: true as const };
        }
        const now = ctx.now();
        if (settingCredits) {
          const balance = balanceOfInput(body.credits!, before.balance, before.creditsEpoch, now.getTime());
          await credits.set('consumer', consumerId, balance, balance?.epoch ?? before.creditsEpoch, now);
        }
        const after = (await withExternalId(changes.externalId, () =>
          consumers.update(consumerId, changes, now),
        ))!;
        const creditsAfter = after.balance && recordedCredits(after.balance, now.getTime());
        const change = {
          action: 'consumer.update' as const,
          target: { type: 'consumer', id: consumerId },
          before: { ...consumerAudit(before), ...(settingCredits && { credits: creditsBefore ?? null }) },
          after: { ...consumerAudit(after), ...(settingCredits && { credits: creditsAfter }) },
        };
        return { result: { consumer: after, changed: true }, ...change };
      });
      if (changed) await ctx.announce({ kind: 'consumer', consumerId });
      if (changed && body.credits !== undefined) await syncCredits(ctx, consumerSubjects(consumer));
      sendJson(res, consumerView(consumer, await consumerCredits(consumer, ctx)));
    },
  }),

  defineOperation({
    id: 'deleteConsumer',
    method: 'delete',
    path: CONSUMER_PATH,
    scope: 'keys:write',
    tag: TAG,
    summary: 'Delete a consumer; with force=true, detach its keys first',
    description:
      'Detached keys keep working, alone: only their own plan limits them. A forced delete records one audit entry for the consumer and one for each key it detached.',
    params: consumerParams,
    query: { schema: DeleteConsumerQuery },
    success: { status: 200, description: 'Deleted', schema: DeleteConsumerResponse },
    errors: {
      ...CONSUMER_NOT_FOUND,
      consumer_has_keys: 'The consumer holds keys and `force` is not `true`; the body adds `keyCount`',
    },
    async handle({ params: { consumerId }, query: { force = false }, res, ctx }) {
      const detached = await ctx.audited(res, async ({ consumers }) => {
        const before = await consumers.get(consumerId, 'update');
        if (!before) throw new AppError('consumer_not_found');
        if (before.keyCount > 0 && !force) {
          throw new AppError(
            'consumer_has_keys',
            `The consumer ${consumerId} holds ${before.keyCount} key(s); detach them or delete with force=true`,
            undefined,
            {
              keyCount: before.keyCount,
            },
          );
        }
        const keys = await consumers.delete(consumerId, ctx.now());
        // Each key detached gets an entry of its own, so its trail (targetId=<key>) shows why its consumer went.
        const preceding = keys.map((key) => ({
          action: 'key.detach_consumer' as const,
          target: { type: 'key', id: key.id },
          before: { ...keyAudit(key), consumerId },
          after: keyAudit(key),
        }));
        const n = keys.length;
        return {
          result: n,
          action: 'consumer.delete',
          target: { type: 'consumer', id: consumerId },
          before: { ...consumerAudit(before), keyCount: n },
          after: null,
          preceding,
        };
      });
      await ctx.announce({ kind: 'consumer', consumerId });
      const note = detached > 0 ? ` (its ${detached} key(s) detached)` : '';
      const body: DeleteConsumerResponse = {
        consumerId,
        message: `Consumer ${consumerId} has been deleted${note}`,
      };
      res.json(body);
    },
  }),
];
