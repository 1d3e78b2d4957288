/**
 * What the proxy admits a request by: a key joined with its plan, its consumer and the consumer's
 * plan, read in one indexed query and turned into the key the key cache holds.
 */
import type { Db } from './db.js';
import type { Balance } from '../plans/balance.js';
import type { CostRule, LimitRule } from '../plans/plan.js';
import { creditColumns, creditsOfRow } from './credit-columns.js';
import { allowedListOf } from './key-row.js';
import { costsOf, limitsOf } from './plan-columns.js';

/** The consumer a key belongs to, with the limits of the consumer's plan. */
export interface KeyConsumer {
  readonly id: string;
  readonly rateLimitId: string | null;
  /** The consumer's plan's limits; null without a plan. */
  readonly limits: readonly LimitRule[] | null;
  /** The consumer's plan's costs; none without a plan. */
  readonly costs: readonly CostRule[];
  /** The consumer's prepaid credits; null: none. */
  readonly balance: Balance | null;
}

/**
 * What the proxy needs to admit a request presenting one secret: the key, its state, its plan, its
 * consumer and the consumer's plan, in one indexed query; and what verify answers of the key besides.
 */
export interface KeyWithPlan {
  readonly id: string;
  readonly name: string;
  readonly externalId: string | null;
  /** The caller's JSON object as serialised. */
  readonly metadata: string;
  readonly rateLimitId: string | null;
  /** The bound plan's limits; null without a plan. */
  readonly limits: readonly LimitRule[] | null;
  /** The bound plan's costs; none without a plan. */
  readonly costs: readonly CostRule[];
  readonly enabled: boolean;
  /** The key's own expiry, epoch ms; null: never. */
  readonly expiresAtMs: number | null;
  /** Set when the secret is the previous one of a roll: the end of its grace, epoch ms. */
  readonly secretValidUntilMs: number | null;
  /** The consumer the key belongs to; null: none. */
  readonly consumer: KeyConsumer | null;
  /** The routes the key may take; null: every route. */
  readonly allowedRouteIds: readonly string[] | null;
  /** The origins the key may be used from; null: any. */
  readonly allowedOrigins: readonly string[] | null;
  /** The client addresses and CIDR blocks the key may be used from; null: any. */
  readonly allowedAddresses: readonly string[] | null;
  /** The key's own prepaid credits; null: none. */
  readonly balance: Balance | null;
}

/** A key a token names, with its secrets sealed: they sign its tokens (docs/decisions/0091). */
export interface KeyForToken {
  readonly key: KeyWithPlan;
  readonly secretCiphertext: Uint8Array;
  /** A rolled key's previous secret, and the end of its grace (epoch ms); null: none. */
  readonly previous: { readonly ciphertext: Uint8Array; readonly untilMs: number } | null;
}

/** The limits of a plan read through a left join: null when no plan matched. */
function joinedLimits(
  limit: string | number | null,
  period: string | null,
  limits: string | null,
): LimitRule[] | null {
  return limit === null || period === null ? null : limitsOf({ limit, period, limits });
}

/** A key joined with its plan, its consumer and the consumer's plan: what the key cache builds a key of. */
export function keysWithPlans(db: Db) {
  return db
    .selectFrom('api_keys as k')
    .leftJoin('rate_limit_plans as p', 'p.rate_limit_id', 'k.rate_limit_id')
    .leftJoin('consumers as c', 'c.id', 'k.consumer_id')
    .leftJoin('rate_limit_plans as cp', 'cp.rate_limit_id', 'c.rate_limit_id')
    .select([
      'k.id as id',
      'k.name as name',
      'k.external_id as externalId',
      'k.metadata as metadata',
      'k.rate_limit_id as rateLimitId',
      'p.limit as limit',
      'p.period as period',
      'p.limits as limits',
      'p.costs as costs',
      'k.enabled as enabled',
      'k.expires_at as expiresAt',
      'k.secret_hash as secretHash',
      'k.previous_secret_expires_at as previousSecretExpiresAt',
      'c.id as consumerId',
      'c.rate_limit_id as consumerRateLimitId',
      'cp.limit as consumerLimit',
      'cp.period as consumerPeriod',
      'cp.limits as consumerLimits',
      'cp.costs as consumerCosts',
      'k.allowed_route_ids as allowedRouteIds',
      'k.allowed_origins as allowedOrigins',
      'k.allowed_addresses as allowedAddresses',
      ...creditColumns('k', 'credits'),
      ...creditColumns('c', 'consumerCredits'),
    ]);
}

/** A key's row joined with its plans as the key cache takes it; `secretValidUntilMs` for the secret presented. */
export function keyWithPlanOf(
  row: {
    id: string;
    name: string;
    externalId: string | null;
    metadata: string;
    rateLimitId: string | null;
    limit: string | number | null;
    period: string | null;
    limits: string | null;
    costs: string | null;
    enabled: boolean;
    expiresAt: Date | null;
    consumerId: string | null;
    consumerRateLimitId: string | null;
    consumerLimit: string | number | null;
    consumerPeriod: string | null;
    consumerLimits: string | null;
    consumerCosts: string | null;
    allowedRouteIds: string | null;
    allowedOrigins: string | null;
    allowedAddresses: string | null;
  } & Parameters<typeof creditsOfRow>[0],
  secretValidUntilMs: number | null,
): KeyWithPlan {
  return {
    id: row.id,
    name: row.name,
    externalId: row.externalId,
    metadata: row.metadata,
    rateLimitId: row.rateLimitId,
    limits: joinedLimits(row.limit, row.period, row.limits),
    costs: costsOf(row.costs),
    enabled: row.enabled,
    expiresAtMs: row.expiresAt?.getTime() ?? null,
    secretValidUntilMs,
    consumer:
      row.consumerId === null
        ? null
        : {
            id: row.consumerId,
            rateLimitId: row.consumerRateLimitId,
            limits: joinedLimits(row.consumerLimit, row.consumerPeriod, row.consumerLimits),
            costs: costsOf(row.consumerCosts),
            balance: creditsOfRow(row, 'consumerCredits').balance,
          },
    allowedRouteIds: allowedListOf(row.allowedRouteIds),
    allowedOrigins: allowedListOf(row.allowedOrigins),
    allowedAddresses: allowedListOf(row.allowedAddresses),
    balance: creditsOfRow(row, 'credits').balance,
  };
}
