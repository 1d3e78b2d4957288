/**
 * A key as `api_keys` stores it and as the repositories hand it out (KeyRow): its columns, and how its
 * allowed routes, origins and addresses and its balance are read from and written to them.
 */
import type { Balance } from '../plans/balance.js';
import { creditColumns, creditsOfRow } from './credit-columns.js';

export interface KeyRow {
  readonly seq: number;
  readonly id: string;
  readonly name: string;
  readonly secretCiphertext: Uint8Array;
  readonly rateLimitId: string | null;
  readonly createdAt: Date;
  readonly lastUpdated: Date;
  readonly enabled: boolean;
  readonly expiresAt: Date | null;
  readonly externalId: string | null;
  /** The caller's JSON object as serialised. */
  readonly metadata: string;
  readonly lastUsedAt: Date | null;
  /** The consumer the key belongs to, or null. */
  readonly consumerId: string | null;
  /** The routes the key may take; null: every route. */
  readonly allowedRouteIds: readonly string[] | null;
  /** The origins it may be used from (src/plans/origins.ts); null: any. */
  readonly allowedOrigins: readonly string[] | null;
  /** The client addresses and CIDR blocks it may be used from; null: any. */
  readonly allowedAddresses: readonly string[] | null;
  /** Its prepaid credits; null: none. */
  readonly balance: Balance | null;
  /** Bumped by every set of its balance, kept when it holds none (src/plans/balance.ts). */
  readonly creditsEpoch: number;
  /** After a roll: when its previous secret stops (or stopped) working; null: no previous secret. */
  readonly previousSecretExpiresAt: Date | null;
  /** Disabled by its portal user, who may enable it again (an administrator's disabling: false). */
  readonly disabledInPortal: boolean;
  /** Its latest leak report (sql/135); null: never reported. */
  readonly leak: KeyLeak | null;
}

/** A report that a key's secret leaked (docs/guides/leaked-keys.md): never the secret itself. */
export interface KeyLeak {
  /** ISO 8601 UTC. */
  readonly at: string;
  /** `github`, or the `source` a `keys/leaked` caller gave. */
  readonly source: string;
  /** Where the secret was found; null: not said. */
  readonly url: string | null;
  /** LEAKED_KEY_ACTION when it was reported. */
  readonly action: 'disable' | 'roll' | 'notify';
}

/** The fields an administrator sets on a key (create and PATCH). */
export interface KeySettings {
  readonly name: string;
  readonly enabled: boolean;
  readonly expiresAt: Date | null;
  readonly externalId: string | null;
  /** A JSON object as serialised. */
  readonly metadata: string;
  readonly consumerId: string | null;
  readonly allowedRouteIds: readonly string[] | null;
  readonly allowedOrigins: readonly string[] | null;
  readonly allowedAddresses: readonly string[] | null;
  readonly disabledInPortal: boolean;
}

/** A key as its audit entries show it: what a change that touches many keys at once returns of each. */
export type KeyAuditRow = Pick<
  KeyRow,
  | 'id'
  | 'name'
  | 'enabled'
  | 'expiresAt'
  | 'externalId'
  | 'metadata'
  | 'rateLimitId'
  | 'consumerId'
  | 'allowedRouteIds'
  | 'allowedOrigins'
  | 'allowedAddresses'
>;

/** The columns of a KeyAuditRow, for the `returning` of an update of many keys (read through `withAllowedRoutes`). */
export const keyAuditColumns = [
  'id',
  'name',
  'enabled',
  'expires_at as expiresAt',
  'external_id as externalId',
  'metadata',
  'rate_limit_id as rateLimitId',
  'consumer_id as consumerId',
  'allowed_route_ids as allowedRouteIds',
  'allowed_origins as allowedOrigins',
  'allowed_addresses as allowedAddresses',
] as const;

/**
 * A key's allowed routes (sql/060), origins or addresses (sql/082) as stored: a JSON array, or null
 * for any.
 */
export const allowedListColumn = (items: readonly string[] | null): string | null =>
  items === null ? null : JSON.stringify(items);
/** A stored allowed list (see `allowedListColumn`) as its items; null: any. */
export const allowedListOf = (column: string | null): string[] | null =>
  column === null ? null : (JSON.parse(column) as string[]);

type AllowedLists = 'allowedRouteIds' | 'allowedOrigins' | 'allowedAddresses';

/** A row read with the columns of `keyAuditColumns`, its allowed routes, origins and addresses parsed. */
export function withAllowedRoutes<T extends Record<AllowedLists, string | null>>(
  row: T,
): Omit<T, AllowedLists> & Record<AllowedLists, string[] | null> {
  return {
    ...row,
    allowedRouteIds: allowedListOf(row.allowedRouteIds),
    allowedOrigins: allowedListOf(row.allowedOrigins),
    allowedAddresses: allowedListOf(row.allowedAddresses),
  };
}

/** The columns of a KeyRow, read by `toKeyRow`. */
export const keyColumns = [
  'seq',
  'id',
  'name',
  'secret_ciphertext as secretCiphertext',
  'rate_limit_id as rateLimitId',
  'created_at as createdAt',
  'last_updated as lastUpdated',
  'enabled',
  'expires_at as expiresAt',
  'external_id as externalId',
  'metadata',
  'last_used_at as lastUsedAt',
  'consumer_id as consumerId',
  'allowed_route_ids as allowedRouteIds',
  'previous_secret_expires_at as previousSecretExpiresAt',
  'allowed_origins as allowedOrigins',
  'allowed_addresses as allowedAddresses',
  'disabled_in_portal as disabledInPortal',
  'leak',
  ...creditColumns('api_keys', 'credits'),
] as const;

/** A row read with `keyColumns` as the KeyRow it stores. */
export function toKeyRow(
  row: { seq: string | number; leak: string | null } & Record<AllowedLists, string | null> &
    Omit<KeyRow, 'seq' | AllowedLists | 'balance' | 'creditsEpoch' | 'leak'>,
): KeyRow {
  const { balance, epoch } = creditsOfRow(row, 'credits');
  const allowed = withAllowedRoutes(row);
  return {
    id: row.id,
    name: row.name,
    secretCiphertext: row.secretCiphertext,
    rateLimitId: row.rateLimitId,
    createdAt: row.createdAt,
    lastUpdated: row.lastUpdated,
    enabled: row.enabled,
    expiresAt: row.expiresAt,
    externalId: row.externalId,
    metadata: row.metadata,
    lastUsedAt: row.lastUsedAt,
    consumerId: row.consumerId,
    allowedRouteIds: allowed.allowedRouteIds,
    allowedOrigins: allowed.allowedOrigins,
    allowedAddresses: allowed.allowedAddresses,
    seq: Number(row.seq),
    balance,
    creditsEpoch: epoch,
    previousSecretExpiresAt: row.previousSecretExpiresAt,
    disabledInPortal: row.disabledInPortal,
    leak: row.leak === null ? null : (JSON.parse(row.leak) as KeyLeak),
  };
}
