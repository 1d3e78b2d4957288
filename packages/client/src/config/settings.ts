/** Comparing what a file declares with what the service holds, field by field. */

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

/** A request match without the defaults the service may spell out (`caseInsensitive: false`). */
export function matchSettings<T extends object>(match: T): T {
  return Object.fromEntries(Object.entries(match).filter(([, v]) => v !== false && v !== undefined)) as T;
}
