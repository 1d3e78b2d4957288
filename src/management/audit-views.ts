/**
 * What the audit log records of a target before and after a change: what the API shows of it, less
 * every secret, hash and ciphertext (and less what changes by itself, such as `lastUsedAt`).
 */
import type { AdminTokenRow } from '../store/admin-token-repository.js';
import type { KeyRow } from '../store/key-repository.js';
import type { PlanRow } from '../store/plan-repository.js';
import { isoTimestamp } from './time-format.js';

const isoOrNull = (instant: Date | null): string | null => (instant === null ? null : isoTimestamp(instant));

export function keyAudit(key: KeyRow): Record<string, unknown> {
  return {
    name: key.name,
    enabled: key.enabled,
    expiresAt: isoOrNull(key.expiresAt),
    externalId: key.externalId,
    metadata: JSON.parse(key.metadata) as unknown,
    rateLimitId: key.rateLimitId,
  };
}

export function planAudit(plan: Pick<PlanRow, 'rateLimitId' | 'description' | 'limit' | 'period'>): Record<string, unknown> {
  return { rateLimitId: plan.rateLimitId, description: plan.description, limit: plan.limit, period: plan.period };
}

export function tokenAudit(token: AdminTokenRow): Record<string, unknown> {
  return { name: token.name, scopes: token.scopes, expiresAt: isoOrNull(token.expiresAt) };
}
