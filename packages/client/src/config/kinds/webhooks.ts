/**
 * Webhooks, identified by `url`. Two may share a URL (say, with different events): a declared webhook
 * is then paired with one of that URL that it leaves unchanged, if any (plan-changes.ts). Their
 * signing secrets are Tollgate's to generate: created here, never printed; read them from the console
 * or roll them through the API.
 */
import type { components } from '../../generated/management-api.js';
import { answerOf } from '../api-call.js';
import type { WebhookItem } from '../config-file.js';
import type { Kind } from '../kind.js';
import { changedSettings } from '../settings.js';

type Webhook = components['schemas']['Webhook'];

export const webhooks: Kind<WebhookItem, Webhook> = {
  section: 'webhooks',
  noun: 'webhook',
  list: async (client) => (await answerOf(client.GET('/tollgate/webhooks'))).webhooks,
  identityOfItem: (item) => item.url,
  identityOf: (webhook) => webhook.url,
  differences(item, webhook) {
    const changed = changedSettings(
      { events: [...item.events].sort(), description: item.description ?? '' },
      { events: [...webhook.events].sort(), description: webhook.description },
    );
    // The declared order, not the sorted one used to compare.
    return 'events' in changed ? { ...changed, events: item.events } : changed;
  },
  async create(client, item) {
    // The answer holds the signing secret: it is dropped here, never printed.
    await answerOf(client.POST('/tollgate/webhooks', { body: item }));
  },
  async update(client, webhook, patch) {
    await answerOf(
      client.PATCH('/tollgate/webhooks/{webhookId}', {
        params: { path: { webhookId: webhook.id } },
        body: patch,
      }),
    );
  },
  async remove(client, webhook) {
    await answerOf(
      client.DELETE('/tollgate/webhooks/{webhookId}', { params: { path: { webhookId: webhook.id } } }),
    );
  },
  exported: (webhook) => ({ url: webhook.url, events: webhook.events, description: webhook.description }),
};
