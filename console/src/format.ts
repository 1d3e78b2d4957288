/** How times and numbers read in the console: UTC throughout, like the API. */

/** `2026-11-21T14:23:02Z` → `2026-11-21 14:23:02 UTC`. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  return iso.replace('T', ' ').replace('Z', ' UTC');
}

const UNITS: readonly [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1_000, 's'],
];

/** `3 min ago`, `in 2 d`; `never` for null. */
export function relativeTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const delta = Date.parse(iso) - now;
  const size = Math.abs(delta);
  if (size < 5_000) return 'just now';
  const [unit, name] = UNITS.find(([ms]) => size >= ms) ?? UNITS[UNITS.length - 1]!;
  const amount = Math.floor(size / unit);
  return delta < 0 ? `${amount} ${name} ago` : `in ${amount} ${name}`;
}

const NUMBER = new Intl.NumberFormat('en');
export const formatNumber = (n: number): string => NUMBER.format(n);

/** `1 key`, `2,000 keys`. */
export const countOf = (n: number, noun: string): string => `${formatNumber(n)} ${noun}${n === 1 ? '' : 's'}`;

/** An ISO instant without fractions, as the API takes it. */
export const isoSeconds = (ms: number): string =>
  new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** A `datetime-local` value read as UTC (the console's labels say so) → the API's form. */
export function utcInputToIso(value: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value)) return undefined;
  const iso = (value.length === 16 ? value + ':00' : value) + 'Z';
  return Number.isNaN(Date.parse(iso)) ? undefined : iso;
}

/** The API's instant → a `datetime-local` value in UTC. */
export function isoToUtcInput(iso: string | null | undefined): string {
  return iso ? iso.slice(0, 16) : '';
}

export const METADATA_HINT = 'Metadata must be a JSON object, such as {"tier": "gold"}.';

/** A key's metadata as typed: a JSON object (empty text: `{}`), else undefined. */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text.trim() === '' ? '{}' : text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
