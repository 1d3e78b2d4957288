/** When a failed webhook delivery is tried again (docs/guides/webhooks.md). */
import { nextAttemptAt, RETRY_SCHEDULE_MS } from '../../src/webhooks/retry-schedule.js';

const S = 1_000;
const H = 3_600 * S;

it('tries again about 5 s, 30 s, 2 min, 10 min, 1 h, 4 h, 12 h and 24 h after the first attempt, then gives up', () => {
  const first = Date.UTC(2026, 10, 23, 12);
  const attempts = [first];
  for (let next = nextAttemptAt(first, first); next !== null; next = nextAttemptAt(first, next))
    attempts.push(next);
  expect(attempts.map((t) => t - first)).toEqual([
    0,
    5 * S,
    30 * S,
    120 * S,
    600 * S,
    H,
    4 * H,
    12 * H,
    24 * H,
  ]);
  expect(RETRY_SCHEDULE_MS.at(-1)).toBe(24 * H);
});

it('skips the slots an attempt outlasted instead of catching up in a burst', () => {
  // The first attempt waited its full 15 s: the 5 s slot is gone, the next is at 30 s.
  expect(nextAttemptAt(0, 15 * S)).toBe(30 * S);
  // Every replica was down for two hours: the next slot ahead, not the four missed.
  expect(nextAttemptAt(0, 2 * H)).toBe(4 * H);
  // A manual retry a week later is that one attempt.
  expect(nextAttemptAt(0, 7 * 24 * H)).toBeNull();
});
