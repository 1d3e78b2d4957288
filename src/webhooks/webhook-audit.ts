/** What the audit log records of a webhook before and after a change: its settings, never its secret. */
import type { WebhookRow } from '../store/webhook-repository.js';

export function webhookAudit(webhook: WebhookRow): Record<string, unknown> {
  return {
    url: webhook.url,
    events: webhook.events,
    description: webhook.description,
    enabled: webhook.enabled,
    ...(webhook.disabledReason !== null && { disabledReason: webhook.disabledReason }),
  };
}
