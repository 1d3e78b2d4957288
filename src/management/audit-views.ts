/**
 * What the audit log records of a target before and after a change: what the API shows of it, less
 * every secret, hash and ciphertext (and less what changes by itself, such as `lastUsedAt`). A key's
 * `metadata` stays the text the caller wrote.
 */
import type { AdminTokenRow } from '../store/admin-token-repository.js';
import type { KeyRow } from '../store/key-repository.js';
import type { PlanRow } from '../store/plan-repository.js';
import { RawJson } from './json-as-written.js';
import { isoTimestamp } from './time-format.js';

const isoOrNull = (instant: Date | null): string | null => (instant === null ? null : isoTimestamp(instant));

export function keyAudit(key: Pick<KeyRow, 'name' | 'enabled' | 'expiresAt' | 'externalId' | 'metadata' | 'rateLimitId'>): Record<string, unknown> {
  return {
    name: key.name,
    enabled: key.enabled,
    expiresAt: isoOrNull(key.expiresAt),
    externalId: key.externalId,
    metadata: new RawJson(key.metadata),
    rateLimitId: key.rateLimitId,
  };
}

export function planAudit(plan: Pick<PlanRow, 'rateLimitId' | 'description' | 'limits'>): Record<string, unknown> {
  return { rateLimitId: plan.rateLimitId, description: plan.description, limits: plan.limits };
}

export function tokenAudit(token: AdminTokenRow): Record<string, unknown> {
  return { name: token.name, scopes: token.scopes, expiresAt: isoOrNull(token.expiresAt) };
}
