/**
 * Every action the audit log records, once: the entries' type, the OpenAPI document (an enum, so the
 * console's action filter is typed against it) and the description of the audit log's `action` filter.
 */
export const AUDIT_ACTIONS = [
  'key.create',
  'key.update',
  'key.roll',
  'key.delete',
  'key.apply_plan',
  'key.remove_plan',
  'key.detach_consumer',
  'key.credits_add',
  'key.credits_set',
  'plan.create',
  'plan.update',
  'plan.delete',
  'consumer.create',
  'consumer.update',
  'consumer.remove_plan',
  'consumer.delete',
  'consumer.credits_add',
  'consumer.credits_set',
  'route.create',
  'route.update',
  'route.delete',
  'admin_token.create',
  'admin_token.delete',
  'webhook.create',
  'webhook.update',
  'webhook.delete',
  'webhook.rotate_secret',
  'webhook.retry_delivery',
  'webhook.disable',
  'billing_export.create',
  'billing_export.update',
  'billing_export.delete',
  'billing_export.run',
  'portal.update_settings',
  'portal.session_create',
  'portal.session_delete',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];
