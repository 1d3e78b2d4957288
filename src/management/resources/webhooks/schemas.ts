/** The requests and answers of the webhook operations and their delivery log. */
import { type Static, Type } from '@sinclair/typebox';
import { EVENT_TYPES, type EventType } from '../../../events/event-types.js';
import {
  Count,
  IsoTimestamp,
  MAX_DESCRIPTION_LENGTH,
  NextCursor,
  NO_NUL,
  pageFields,
  strict,
} from '../../schemas.js';

export const WebhookId = Type.String({
  pattern: '^whk_[A-Za-z0-9_-]{22}$',
  description: 'Identifier of a webhook',
  examples: ['whk_Yc2xR0f1bW8mT5nYk9Lp4A'],
});
export const DeliveryId = Type.String({
  pattern: '^dlv_[A-Za-z0-9_-]{22}$',
  description: 'Identifier of a delivery',
  examples: ['dlv_3q2xR0f1bW8mT5nYk9Lp4A'],
});
export const MAX_URL_LENGTH = 2048;

const WebhookUrl = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  pattern: NO_NUL,
  description:
    'Where deliveries are POSTed: an http: or https: URL without user or password, at most 2048 characters. Private and loopback addresses are allowed',
  examples: ['https://billing.internal.example/hooks/tollgate'],
});
const EventTypeSchema = Type.Unsafe<EventType>({
  type: 'string',
  enum: [...EVENT_TYPES],
  description: 'An event type (docs/guides/webhooks.md, Events)',
});
const Events = Type.Array(EventTypeSchema, {
  minItems: 1,
  uniqueItems: true,
  description: 'The event types delivered to this webhook, each once',
});
const WebhookDescription = Type.String({
  maxLength: MAX_DESCRIPTION_LENGTH,
  pattern: NO_NUL,
  description: 'Free text, at most 1000 characters',
});

export const CreateWebhookRequest = Type.Object(
  { url: WebhookUrl, events: Events, description: Type.Optional({ ...WebhookDescription, default: '' }) },
  { ...strict, title: 'CreateWebhookRequest' },
);

export const UpdateWebhookRequest = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    events: Type.Optional(Events),
    enabled: Type.Optional(
      Type.Boolean({
        description:
          'A disabled webhook gets no new deliveries and its pending ones wait; enabling it sends those and starts its failure count afresh',
      }),
    ),
    description: Type.Optional(WebhookDescription),
  },
  { ...strict, minProperties: 1, title: 'UpdateWebhookRequest', description: 'Any of the fields' },
);

const webhookFields = {
  id: WebhookId,
  url: Type.String(),
  events: Type.Array(EventTypeSchema),
  description: Type.String(),
  enabled: Type.Boolean(),
  disabledAt: Type.Union([IsoTimestamp, Type.Null()], {
    description: 'When Tollgate disabled the webhook after 3 days of failed deliveries; null otherwise',
  }),
  disabledReason: Type.Union([Type.String(), Type.Null()], {
    description: 'Why Tollgate disabled it; null otherwise',
  }),
  createdAt: IsoTimestamp,
  lastUpdated: IsoTimestamp,
};

export const WebhookResponse = Type.Object(webhookFields, { ...strict, title: 'Webhook' });

export const CreateWebhookResponse = Type.Object(
  {
    ...webhookFields,
    secret: Type.String({
      pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
      description:
        'The signing secret (Standard Webhooks: the HMAC-SHA256 key is the base64 after `whsec_`): shown this once, stored encrypted',
      examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw7cHuLlmDzyg='],
    }),
  },
  { ...strict, title: 'CreateWebhookResponse' },
);

export const ListWebhooksResponse = Type.Object(
  { webhooks: Type.Array(WebhookResponse, { description: 'Oldest first; never a secret' }) },
  { ...strict, title: 'ListWebhooksResponse' },
);

export const DeleteWebhookResponse = Type.Object(
  { id: WebhookId, message: Type.String() },
  { ...strict, title: 'DeleteWebhookResponse' },
);

export const ListDeliveriesQuery = Type.Object(pageFields, { ...strict, title: 'ListDeliveriesQuery' });

export const DeliveryResponse = Type.Object(
  {
    id: DeliveryId,
    eventId: Type.String({ description: 'The event: the `webhook-id` header of every attempt' }),
    type: EventTypeSchema,
    state: Type.Unsafe<'pending' | 'delivered' | 'failed'>({
      type: 'string',
      enum: ['pending', 'delivered', 'failed'],
      description:
        '`pending`: an attempt is due or in flight; `delivered`: a 2xx came within 15 s; `failed`: every attempt of the schedule failed',
    }),
    attempts: Count,
    lastStatus: Type.Union([Type.Integer(), Type.Null()], {
      description:
        "The receiver's HTTP status at the last attempt; null: none yet, or no answer (see lastError)",
    }),
    lastError: Type.Union([Type.String(), Type.Null()], {
      description:
        'Why the last attempt got no answer (a timeout, a refused or closed connection); null otherwise',
    }),
    lastAttemptAt: Type.Union([IsoTimestamp, Type.Null()]),
    nextAttemptAt: Type.Union([IsoTimestamp, Type.Null()], {
      description: 'When the next attempt is due; null once delivered or failed',
    }),
    createdAt: IsoTimestamp,
  },
  { ...strict, title: 'Delivery' },
);

export const ListDeliveriesResponse = Type.Object(
  {
    deliveries: Type.Array(DeliveryResponse, { description: 'Newest first' }),
    nextCursor: NextCursor,
  },
  { ...strict, title: 'ListDeliveriesResponse' },
);

export type CreateWebhookRequest = Static<typeof CreateWebhookRequest>;
export type UpdateWebhookRequest = Static<typeof UpdateWebhookRequest>;
export type WebhookResponse = Static<typeof WebhookResponse>;
export type CreateWebhookResponse = Static<typeof CreateWebhookResponse>;
export type ListWebhooksResponse = Static<typeof ListWebhooksResponse>;
export type DeleteWebhookResponse = Static<typeof DeleteWebhookResponse>;
export type DeliveryResponse = Static<typeof DeliveryResponse>;
export type ListDeliveriesResponse = Static<typeof ListDeliveriesResponse>;
