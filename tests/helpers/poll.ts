/** Waiting in tests: a pause, and polling until a condition holds. */

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` every `everyMs` until `done(value)`; resolves the last value and the time it took. */
export async function waitFor<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 10_000, everyMs = 50 } = {},
): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  for (;;) {
    const value = await probe();
    const ms = performance.now() - started;
    if (done(value) || ms > timeoutMs) return { value, ms };
    await sleep(everyMs);
  }
}
