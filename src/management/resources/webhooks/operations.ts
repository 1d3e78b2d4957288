/**
 * Webhooks: endpoints that receive Tollgate's events, their delivery logs and manual retries
 * (docs/guides/webhooks.md). Deliveries are made and sent by src/webhooks/delivery-worker.ts.
 */
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { AppError } from '../../../errors.js';
import { encryptSecret } from '../../../keys/secret.js';
import type { DeliveryRow } from '../../../store/delivery-repository.js';
import { generateSigningSecret } from '../../../webhooks/signing-secret.js';
import { webhookAudit } from '../../../webhooks/webhook-audit.js';
import type { WebhookRow, WebhookSettings } from '../../../store/webhook-repository.js';
import { defineOperation } from '../../operation.js';
import { pageOf, positionAfter } from '../../pages.js';
import {
  CreateWebhookRequest,
  CreateWebhookResponse,
  DeleteWebhookResponse,
  DeliveryId,
  DeliveryResponse,
  ListDeliveriesQuery,
  ListDeliveriesResponse,
  ListWebhooksResponse,
  UpdateWebhookRequest,
  WebhookId,
  WebhookResponse,
} from './schemas.js';
import { DEFAULT_PAGE_SIZE, type ValidationDetail } from '../../schemas.js';
import { isoTimestamp } from '../../time-format.js';

const TAG = 'Webhooks';
const WEBHOOKS_PATH = '/tollgate/webhooks';
const WEBHOOK_PATH = `${WEBHOOKS_PATH}/:webhookId`;
const WebhookParams = Type.Object({ webhookId: { ...WebhookId, description: 'The webhook id (`id`)' } });
const webhookParams = { schema: WebhookParams, notFound: 'webhook_not_found' } as const;
const WEBHOOK_NOT_FOUND = { webhook_not_found: 'No webhook has that id' } as const;
/** The position in a delivery log names a delivery. */
const DELIVERY_ID = /^dlv_[A-Za-z0-9_-]{22}$/;

const isoOrNull = (instant: Date | null): string | null => (instant === null ? null : isoTimestamp(instant));

function webhookView(webhook: WebhookRow): WebhookResponse {
  return {
    id: webhook.id,
    url: webhook.url,
    events: [...webhook.events],
    description: webhook.description,
    enabled: webhook.enabled,
    disabledAt: isoOrNull(webhook.disabledAt),
    disabledReason: webhook.disabledReason,
    createdAt: isoTimestamp(webhook.createdAt),
    lastUpdated: isoTimestamp(webhook.lastUpdated),
  };
}

function deliveryView(delivery: DeliveryRow): DeliveryResponse {
  return {
    id: delivery.id,
    eventId: delivery.eventId,
    type: delivery.eventType,
    state: delivery.state,
    attempts: delivery.attempts,
    lastStatus: delivery.lastStatus,
    lastError: delivery.lastError,
    lastAttemptAt: isoOrNull(delivery.lastAttemptAt),
    nextAttemptAt: isoOrNull(delivery.nextAttemptAt),
    createdAt: isoTimestamp(delivery.createdAt),
  };
}

/** What the audit log records of a delivery a retry moved. */
const deliveryAudit = (delivery: DeliveryRow) => ({
  deliveryId: delivery.id,
  eventId: delivery.eventId,
  state: delivery.state,
  nextAttemptAt: isoOrNull(delivery.nextAttemptAt),
});

/**
 * Only http: and https: (docs/guides/webhooks.md), to any host, private and loopback included. No user or
 * password: the URL is shown to every reader of webhooks and kept in the audit log, where no secret goes.
 */
function urlProblems(body: { url?: string }): ValidationDetail[] {
  if (body.url === undefined) return [];
  let url: URL;
  try {
    url = new URL(body.url);
  } catch {
    return [{ field: 'url', message: 'must be an absolute http: or https: URL' }];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return [{ field: 'url', message: 'must be an http: or https: URL' }];
  if (url.username !== '' || url.password !== '')
    return [
      {
        field: 'url',
        message: 'must not carry a user or password (it is shown to every reader of webhooks)',
      },
    ];
  return [];
}

/** Whether every setting named already has that value. */
function changesNothing(webhook: WebhookRow, changes: Partial<WebhookSettings>): boolean {
  return Object.entries(changes).every(
    ([field, value]) => JSON.stringify(webhook[field as keyof WebhookSettings]) === JSON.stringify(value),
  );
}

export const webhookOperations = [
  defineOperation({
    id: 'createWebhook',
    method: 'post',
    path: WEBHOOKS_PATH,
    scope: 'webhooks:write',
    tag: TAG,
    summary: 'Create a webhook: an endpoint and the events it receives',
    description:
      'The signing secret (`secret`, `whsec_<base64>`) is shown in this answer only and stored encrypted. The webhook receives the events that happen from now on.',
    body: { schema: CreateWebhookRequest, check: urlProblems },
    success: {
      status: 201,
      description: 'Created',
      schema: CreateWebhookResponse,
      headers: { Location: 'Path of the webhook' },
    },
    async handle({ body, res, ctx }) {
      const id = 'whk_' + randomBytes(16).toString('base64url');
      const secret = generateSigningSecret();
      const settings: WebhookSettings = {
        url: body.url,
        events: body.events,
        description: body.description ?? '',
        enabled: true,
      };
      const webhook = await ctx.audited(res, async ({ webhooks }) => {
        await webhooks.insert({
          ...settings,
          id,
          secretCiphertext: encryptSecret(secret, ctx.sealingKey),
          createdAt: ctx.now(),
        });
        const created = (await webhooks.get(id))!;
        return {
          result: created,
          action: 'webhook.create',
          target: { type: 'webhook', id },
          before: null,
          after: webhookAudit(created),
        };
      });
      const answer: CreateWebhookResponse = { ...webhookView(webhook), secret };
      res.status(201).location(`${ctx.prefix}${WEBHOOKS_PATH}/${id}`).json(answer);
    },
  }),

  defineOperation({
    id: 'listWebhooks',
    method: 'get',
    path: WEBHOOKS_PATH,
    scope: 'webhooks:read',
    tag: TAG,
    summary: 'List webhooks, oldest first (never their secrets)',
    success: { status: 200, description: 'Every webhook', schema: ListWebhooksResponse },
    async handle({ res, ctx }) {
      const answer: ListWebhooksResponse = { webhooks: (await ctx.webhooks.list()).map(webhookView) };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'getWebhook',
    method: 'get',
    path: WEBHOOK_PATH,
    scope: 'webhooks:read',
    tag: TAG,
    summary: 'Show a webhook (and whether Tollgate disabled it, and why)',
    params: webhookParams,
    success: { status: 200, description: 'The webhook', schema: WebhookResponse },
    errors: WEBHOOK_NOT_FOUND,
    async handle({ params, res, ctx }) {
      const webhook = await ctx.webhooks.get(params.webhookId);
      if (!webhook) throw new AppError('webhook_not_found');
      res.json(webhookView(webhook));
    },
  }),

  defineOperation({
    id: 'updateWebhook',
    method: 'patch',
    path: WEBHOOK_PATH,
    scope: 'webhooks:write',
    tag: TAG,
    summary: 'Change a webhook: url, events, enabled, description',
    description:
      'Any of the fields. Disabling keeps the pending deliveries waiting and makes no new ones; enabling sends them and counts failures afresh (a webhook Tollgate disabled after 3 days of failures is enabled so). A body that sets only what the webhook already has changes nothing (no audit entry).',
    params: webhookParams,
    body: { schema: UpdateWebhookRequest, check: urlProblems },
    success: { status: 200, description: 'The webhook as it now is', schema: WebhookResponse },
    errors: WEBHOOK_NOT_FOUND,
    async handle({ params: { webhookId: id }, body, res, ctx }) {
      const changes: Partial<WebhookSettings> = body;
      const webhook = await ctx.audited(res, async ({ webhooks }) => {
        const before = await webhooks.get(id);
        if (!before) throw new AppError('webhook_not_found');
        if (changesNothing(before, changes)) return { result: before, unchanged: true as const };
        const after = (await webhooks.update(id, changes, ctx.now()))!;
        return {
          result: after,
          action: 'webhook.update',
          target: { type: 'webhook', id },
          before: webhookAudit(before),
          after: webhookAudit(after),
        };
      });
      res.json(webhookView(webhook));
    },
  }),

  defineOperation({
    id: 'deleteWebhook',
    method: 'delete',
    path: WEBHOOK_PATH,
    scope: 'webhooks:write',
    tag: TAG,
    summary: 'Delete a webhook and its delivery log',
    description: 'Deliveries not yet made are dropped.',
    params: webhookParams,
    success: { status: 200, description: 'Deleted', schema: DeleteWebhookResponse },
    errors: WEBHOOK_NOT_FOUND,
    async handle({ params: { webhookId: id }, res, ctx }) {
      await ctx.audited(res, async ({ webhooks }) => {
        const before = await webhooks.delete(id);
        if (!before) throw new AppError('webhook_not_found');
        return {
          result: undefined,
          action: 'webhook.delete',
          target: { type: 'webhook', id },
          before: webhookAudit(before),
          after: null,
        };
      });
      const answer: DeleteWebhookResponse = { id, message: `Webhook ${id} has been deleted` };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'rotateWebhookSecret',
    method: 'post',
    path: `${WEBHOOK_PATH}/rotate-secret`,
    scope: 'webhooks:write',
    tag: TAG,
    summary: "Replace a webhook's signing secret",
    description:
      'A new signing secret (`secret`, `whsec_<base64>`) replaces the old one at once: every attempt from now on, retries of earlier events included, is signed with it, so update the receiver when you rotate. The new secret is shown in this answer only and stored encrypted; the audit log records the rotation, never the secret.',
    params: webhookParams,
    success: { status: 200, description: 'The webhook, with its new secret', schema: CreateWebhookResponse },
    errors: WEBHOOK_NOT_FOUND,
    async handle({ params: { webhookId: id }, res, ctx }) {
      const secret = generateSigningSecret();
      const webhook = await ctx.audited(res, async ({ webhooks }) => {
        const before = await webhooks.get(id);
        if (!before) throw new AppError('webhook_not_found');
        const after = (await webhooks.replaceSecret(id, encryptSecret(secret, ctx.sealingKey), ctx.now()))!;
        return {
          result: after,
          action: 'webhook.rotate_secret',
          target: { type: 'webhook', id },
          before: webhookAudit(before),
          after: webhookAudit(after),
        };
      });
      const answer: CreateWebhookResponse = { ...webhookView(webhook), secret };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'listWebhookDeliveries',
    method: 'get',
    path: `${WEBHOOK_PATH}/deliveries`,
    scope: 'webhooks:read',
    tag: TAG,
    summary: "A webhook's delivery log, newest first",
    description:
      'One delivery per event sent to the webhook: its attempts, the last status or error, and the next attempt. Attempts back off about 5 s, 30 s, 2 min, 10 min, 1 h, 4 h, 12 h and 24 h after the first; deliveries are kept 30 days.',
    params: webhookParams,
    query: { schema: ListDeliveriesQuery },
    success: { status: 200, description: 'One page of deliveries', schema: ListDeliveriesResponse },
    errors: WEBHOOK_NOT_FOUND,
    async handle({ params: { webhookId: id }, query, res, ctx }) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const after = positionAfter(query.cursor, DELIVERY_ID);
      if (!(await ctx.webhooks.get(id))) throw new AppError('webhook_not_found');
      const rows = await ctx.deliveries.list(id, after, limit + 1);
      const { items, nextCursor } = pageOf(rows, limit, (d) => ({ at: d.createdAt.getTime(), id: d.id }));
      const answer: ListDeliveriesResponse = {
        deliveries: items.map(deliveryView),
        ...(nextCursor !== undefined && { nextCursor }),
      };
      res.json(answer);
    },
  }),

  defineOperation({
    id: 'retryWebhookDelivery',
    method: 'post',
    path: `${WEBHOOK_PATH}/deliveries/:deliveryId/retry`,
    scope: 'webhooks:write',
    tag: TAG,
    summary: 'Send a delivery again now',
    description:
      'Whatever its state: the next attempt is due at once, with the same `webhook-id`, so a receiver that dedupes still sees the event once. A delivery whose schedule had ended gets this one attempt.',
    params: {
      schema: Type.Object({
        webhookId: WebhookParams.properties.webhookId,
        deliveryId: { ...DeliveryId, description: 'The delivery id (`id` in the log)' },
      }),
      notFound: 'webhook_not_found',
    },
    success: { status: 200, description: 'The delivery, due now', schema: DeliveryResponse },
    errors: {
      ...WEBHOOK_NOT_FOUND,
      delivery_not_found: 'The webhook has no delivery with that id',
      webhook_disabled: 'The webhook is disabled',
    },
    async handle({ params: { webhookId, deliveryId }, res, ctx }) {
      const delivery = await ctx.audited(res, async ({ webhooks, deliveries }) => {
        const webhook = await webhooks.get(webhookId);
        if (!webhook) throw new AppError('webhook_not_found');
        const before = await deliveries.get(webhookId, deliveryId);
        if (!before) throw new AppError('delivery_not_found');
        if (!webhook.enabled) throw new AppError('webhook_disabled');
        const after = (await deliveries.retry(webhookId, deliveryId, ctx.now()))!;
        return {
          result: after,
          action: 'webhook.retry_delivery',
          target: { type: 'webhook', id: webhookId },
          before: deliveryAudit(before),
          after: deliveryAudit(after),
        };
      });
      res.json(deliveryView(delivery));
    },
  }),
];
