/**
 * What the audit log records of a target before and after a change: what the API shows of it, less
 * every secret, hash and ciphertext (and less what changes by itself, such as `lastUsedAt`). A key's
 * `metadata` stays the text the caller wrote.
 */
import type { BillingExport } from '../billing/billing-export.js';
import type { AdminTokenRow } from '../store/admin-token-repository.js';
import type { ConsumerSettings } from '../store/consumer-repository.js';
import type { KeyAuditRow } from '../store/key-row.js';
import type { PlanRow } from '../store/plan-repository.js';
import type { RouteConfig } from '../plans/route.js';
import { RawJson } from './json-as-written.js';
import { isoTimestamp } from './time-format.js';

const isoOrNull = (instant: Date | null): string | null => (instant === null ? null : isoTimestamp(instant));

export function keyAudit(key: Omit<KeyAuditRow, 'id'>): Record<string, unknown> {
  return {
    name: key.name,
    enabled: key.enabled,
    expiresAt: isoOrNull(key.expiresAt),
    externalId: key.externalId,
    metadata: new RawJson(key.metadata),
    rateLimitId: key.rateLimitId,
    consumerId: key.consumerId,
    allowedRouteIds: key.allowedRouteIds,
    allowedOrigins: key.allowedOrigins,
    allowedAddresses: key.allowedAddresses,
  };
}

export function consumerAudit(consumer: ConsumerSettings): Record<string, unknown> {
  return {
    name: consumer.name,
    externalId: consumer.externalId,
    metadata: new RawJson(consumer.metadata),
    rateLimitId: consumer.rateLimitId,
  };
}

export function planAudit(
  plan: Pick<PlanRow, 'rateLimitId' | 'description' | 'limits' | 'costs' | 'unit'>,
): Record<string, unknown> {
  return {
    rateLimitId: plan.rateLimitId,
    description: plan.description,
    limits: plan.limits,
    costs: plan.costs,
    unit: plan.unit,
  };
}

export function tokenAudit(token: AdminTokenRow): Record<string, unknown> {
  return { name: token.name, scopes: token.scopes, expiresAt: isoOrNull(token.expiresAt) };
}

/** A route by its `routeId` (the entry's target) and what it does; timestamps aside. */
export function routeAudit({
  routeId,
  match,
  upstreamUrl,
  stripPrefix,
  timeoutMs,
  cors,
}: RouteConfig): Record<string, unknown> {
  return { routeId, match, upstreamUrl, stripPrefix, timeoutMs, cors };
}

/** An export's settings: whether a credential is set, never the credential. */
export function billingExportAudit(e: BillingExport): Record<string, unknown> {
  return {
    type: e.type,
    url: e.url,
    eventName: e.eventName,
    interval: e.interval,
    subject: e.subject,
    customerField: e.customerField,
    hasCredential: e.credentialCiphertext !== null,
  };
}
