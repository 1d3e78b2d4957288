/** Comparing what a file declares with what the service holds, field by field. */
import { normalisedPath } from '../generated/normalised-path.js';

export type Settings = Readonly<Record<string, unknown>>;

/** JSON with object keys sorted: two values are the same setting when their texts are equal. */
export function canonicalText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** The declared fields whose value differs from the actual one, with the declared value. */
export function changedSettings(declared: Settings, actual: Settings): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(declared).filter(
      ([field, value]) => canonicalText(value) !== canonicalText(actual[field]),
    ),
  );
}

/**
 * A request match without the defaults the service may spell out (`caseInsensitive: false`), its path
 * prefix in the normal form the service stores (`/v1/%7Euser` is `/v1/~user`), so a prefix written
 * either way is the same setting.
 */
export function matchSettings<T extends { pathPrefix?: string }>(match: T): T {
  return Object.fromEntries(
    Object.entries(match as Record<string, unknown>)
      .filter(([, v]) => v !== false && v !== undefined)
      .map(([field, v]) => [field, field === 'pathPrefix' ? normalisedPath(v as string) : v]),
  ) as T;
}
