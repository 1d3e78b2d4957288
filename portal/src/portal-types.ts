/**
 * What the portal's own API answers (src/portal/README.md): a consumer's keys, usage, plan and credits,
 * as the management API shapes them where they are the same things. Types only.
 */
import type { components } from '../../console/src/api-types';
import type { Credits, KeyLeak, KeyUsageResponse, LimitState, Plan } from '../../console/src/types';

type Schemas = components['schemas'];

export type Failure = Schemas['FailuresResponse']['failures'][number];
export type FailuresResponse = Schemas['FailuresResponse'];
export type UsageResponse = Pick<KeyUsageResponse, 'buckets' | 'latencyMs' | 'granularity' | 'from' | 'to'>;
export type { Credits, LimitState };

/** How the team brands its portal, and the ways in: shown before and after sign-in. */
export interface Branding {
  readonly title: string;
  readonly logoUrl: string | null;
  readonly accentColor: string | null;
  readonly supportUrl: string | null;
  /** "Sign in with …": the team's OpenID Connect provider, and where the button sends the browser. */
  readonly oidc: { readonly issuer: string; readonly signInPath: string } | null;
  /** Whether the team published an API reference. */
  readonly apiReference: boolean;
}

/** The signed-in user and their consumer (`GET /api/me`). */
export interface Me {
  readonly user: { readonly id: string; readonly email?: string; readonly name?: string };
  readonly consumer: { readonly id: string; readonly name: string };
  readonly expiresAt: string;
  /** Sent back with every write: the proof the portal's own page made it. Held in memory only. */
  readonly csrfToken: string;
  readonly branding: Branding;
}

/** One of the consumer's keys; never its secret, only its masked form. */
export interface PortalKey {
  readonly id: string;
  readonly name: string;
  /** `tg_…abcd`: the secret's own prefix and its last four characters. */
  readonly maskedSecret: string;
  readonly enabled: boolean;
  /** Disabled by the team: only the team can enable it. */
  readonly disabledByAdministrator: boolean;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
  readonly expiresAt: string | null;
  readonly allowedOrigins: readonly string[] | null;
  readonly allowedAddresses: readonly string[] | null;
  /** While a roll's grace lasts: when the previous secret stops working. */
  readonly previousSecretExpiresAt?: string;
  /** Its secret's latest leak report; null: never reported. */
  readonly leak: KeyLeak | null;
}

export interface PortalKeyList {
  readonly keys: readonly PortalKey[];
  /** Creating past it is refused (409 key_limit_reached). */
  readonly maxKeys: number;
}

/** A key with its secret, answered once: on creation. */
export type KeyWithSecret = PortalKey & { readonly secret: string };

/** A plan as the portal shows it: its id, what it says of itself, its limits. */
export interface PortalPlanSummary {
  readonly rateLimitId: string;
  readonly description: string;
  readonly limits: readonly Pick<Plan['limits'][number], 'name' | 'limit' | 'period'>[];
  /** What its limits, balances and usage count: `requests` unless it counts tokens or the like. */
  readonly unit?: string;
}

export interface PlanAndCredits {
  /** The consumer's plan, with where each limit stands now (null: not counted yet). */
  readonly current:
    (PortalPlanSummary & { readonly state: { readonly limits: readonly LimitState[] } | null }) | null;
  readonly credits: Credits | null;
  /** The plans the consumer may switch to. */
  readonly publicPlans: readonly PortalPlanSummary[];
}

/** A token minted from a key (`POST /api/keys/{id}/tokens`): answered once, kept in memory only. */
export interface MintedToken {
  readonly token: string;
  readonly expiresAt: string;
}
