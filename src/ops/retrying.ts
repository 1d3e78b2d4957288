import { setTimeout as sleep } from 'node:timers/promises';

export interface RetryPolicy {
  /** The wait after the first failure; each next one twice as long, up to `mostMs`. */
  readonly firstMs: number;
  readonly mostMs: number;
  /** No sending starts this long after the first: the last failure is thrown. */
  readonly giveUpMs: number;
  /** True: the last failure is thrown now (a process stopping). */
  readonly stopped?: () => boolean;
}

/**
 * `attempt` until it resolves, for a call whose failure may not mean it did nothing (a command whose
 * answer Redis never sent): the caller makes sending it again harmless. The waits are unref'd, so a
 * process stopping waits for none of them.
 */
export async function retrying<T>(attempt: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  const givesUpAt = Date.now() + policy.giveUpMs;
  for (let waitMs = policy.firstMs; ; waitMs = Math.min(2 * waitMs, policy.mostMs)) {
    try {
      return await attempt();
    } catch (err) {
      if (policy.stopped?.() === true || Date.now() + waitMs > givesUpAt) throw err;
    }
    await sleep(waitMs, undefined, { ref: false });
  }
}
