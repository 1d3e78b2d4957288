import type { LimitDecision, RateLimiter } from '../../src/limits/rate-limiter.js';
import type { Plan } from '../../src/limits/plan.js';
import { sleep } from './poll.js';

export interface LoadStats {
  /** Each turn's time, ms. */
  turnMs: number[];
  /** Decisions the limiter gave at once, without waiting for Redis. */
  atOnce: number;
}

/**
 * `turns` turns of `perTurn` requests for one key, the next turn once the last is answered (after
 * `pauseMs`, if set): what a replica with that many requests in flight asks of its limiter.
 */
export async function load(
  limiter: RateLimiter,
  keyId: string,
  policy: Plan,
  turns: number,
  perTurn: number,
  stats: LoadStats = { turnMs: [], atOnce: 0 },
  pauseMs = 0,
): Promise<LimitDecision[]> {
  const decisions: LimitDecision[] = [];
  for (let t = 0; t < turns; t++) {
    if (pauseMs > 0) await sleep(pauseMs);
    const started = performance.now();
    const turn = Array.from({ length: perTurn }, () => limiter.consume(keyId, policy, Date.now()));
    stats.atOnce += turn.filter((d) => !(d instanceof Promise)).length;
    decisions.push(...(await Promise.all(turn)));
    stats.turnMs.push(performance.now() - started);
  }
  return decisions;
}
