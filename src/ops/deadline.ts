/**
 * Waits for `work` at most `ms`: resolves `true` when it settled in time (either way), `false` when
 * the deadline came first. Shutdown steps talk to servers that may hang (a paused Redis answers
 * nothing and ioredis' subscriber commands have no timeout of their own).
 */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)));
  return Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    deadline,
  ]).finally(() => clearTimeout(timer));
}
