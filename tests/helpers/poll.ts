/** Waiting in tests: a pause, and polling until a condition holds. */
import { inspect } from 'node:util';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Polls `probe` every `everyMs` until `done(value)`; resolves the value that satisfied it and the time
 * it took. Fails the test after `timeoutMs`, naming what it waited for (`what`, else `done`'s source)
 * and the last value seen: a caller that moves on after a timeout proves nothing.
 */
export async function waitFor<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 10_000, everyMs = 50, what = done.toString() } = {},
): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  for (;;) {
    const value = await probe();
    const ms = performance.now() - started;
    if (done(value)) return { value, ms };
    if (ms > timeoutMs)
      throw new Error(
        `waited ${Math.round(ms)} ms for ${what}; last value seen: ${inspect(value, { depth: 4, breakLength: Infinity })}`,
      );
    await sleep(everyMs);
  }
}

/**
 * Ms from `started` (a change's answer) until, for every probe, the first call that saw the change
 * was sent: the latest of them. From then on the change is in force where that probe looks. The
 * probes' answers do not count: on a loaded machine they can take a good part of a second by
 * themselves. Throws when a probe has not seen it after `timeoutMs`.
 */
export async function msUntilSeenEverywhere(
  started: number,
  probes: readonly (() => Promise<boolean>)[],
  { timeoutMs = 5_000, everyMs = 20 } = {},
): Promise<number> {
  const seenFrom = await Promise.all(
    probes.map(async (sees) => {
      for (;;) {
        const sentAt = performance.now();
        if (await sees()) return sentAt - started;
        if (sentAt - started > timeoutMs) throw new Error(`not seen ${timeoutMs} ms after the change`);
        await sleep(everyMs);
      }
    }),
  );
  return Math.max(...seenFrom);
}
