/**
 * Every event type a webhook can subscribe to (docs/guides/webhooks.md). A type is listed once it
 * is documented there, whether or not its producer is built yet: a webhook made today for
 * `quota.threshold` receives those events as soon as the limiter emits them.
 */
export const EVENT_TYPES = [
  'key.created',
  'key.updated',
  'key.deleted',
  'key.rolled',
  'key.expiring',
  'key.leaked',
  'consumer.created',
  'consumer.updated',
  'consumer.deleted',
  'quota.threshold',
  'credits.low',
  'credits.exhausted',
  'usage.exported',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
