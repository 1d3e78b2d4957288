/** The event types a webhook can take, as its create and edit forms offer them. */
import type { WebhookEvent } from './types';

/**
 * Every event type (docs/guides/webhooks.md), in its order. Typed against the document's list: a type
 * added there fails the console's typecheck until it is offered here.
 */
export const WEBHOOK_EVENTS = Object.keys({
  'key.created': true,
  'key.updated': true,
  'key.deleted': true,
  'key.rolled': true,
  'key.expiring': true,
  'key.leaked': true,
  'consumer.created': true,
  'consumer.updated': true,
  'consumer.deleted': true,
  'quota.threshold': true,
  'credits.low': true,
  'credits.exhausted': true,
  'usage.exported': true,
} satisfies Record<WebhookEvent, true>) as WebhookEvent[];
