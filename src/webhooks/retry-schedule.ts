/**
 * When a failed delivery is tried again (docs/guides/webhooks.md): at these offsets after its first
 * attempt, about 5 s, 30 s, 2 min, 10 min, 1 h, 4 h, 12 h and 24 h; after the last it has failed.
 */
const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export const RETRY_SCHEDULE_MS: readonly number[] = [
  5 * SECOND,
  30 * SECOND,
  2 * MINUTE,
  10 * MINUTE,
  HOUR,
  4 * HOUR,
  12 * HOUR,
  24 * HOUR,
];

/** A webhook none of whose attempts succeeded for this long is disabled. */
export const DISABLE_AFTER_MS = 3 * 24 * HOUR;

/**
 * The next slot of `schedule` after `nowMs` for a delivery first tried at `firstAttemptMs`; null when
 * none is left. Slots already past are skipped, not caught up: a delivery whose attempts were late (a
 * slow receiver, every replica down) is not sent in a burst, and a manual retry of an old delivery is
 * one attempt, not a new schedule.
 */
export function nextAttemptAt(
  firstAttemptMs: number,
  nowMs: number,
  schedule: readonly number[] = RETRY_SCHEDULE_MS,
): number | null {
  for (const offset of schedule) if (firstAttemptMs + offset > nowMs) return firstAttemptMs + offset;
  return null;
}
