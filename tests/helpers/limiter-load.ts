import type { Decision, RateLimiter } from '../../src/limits/rate-limiter.js';
import type { Subject } from '../../src/plans/subject.js';
import { sleep } from './poll.js';

export interface LoadStats {
  /** Each turn's time, ms. */
  turnMs: number[];
  /** Decisions the limiter gave at once, without waiting for Redis. */
  atOnce: number;
}

/** The subjects and cost of the i-th request of a load. */
export type Request = (i: number) => readonly [subjects: readonly Subject[], cost: number];

/**
 * `turns` turns of `perTurn` requests, the next turn once the last is answered (after `pauseMs`, if
 * set): what a replica with that many requests in flight asks of its limiter. `request` is the
 * subjects of every request (cost 1), or says each request's subjects and cost; `clock` the time each
 * is asked at (the limiter's own, when a test drives it).
 */
export async function load(
  limiter: RateLimiter,
  request: readonly Subject[] | Request,
  turns: number,
  perTurn: number,
  stats: LoadStats = { turnMs: [], atOnce: 0 },
  pauseMs = 0,
  clock: () => number = Date.now,
): Promise<Decision[]> {
  const next: Request = typeof request === 'function' ? request : () => [request, 1];
  const decisions: Decision[] = [];
  let i = 0;
  for (let t = 0; t < turns; t++) {
    if (pauseMs > 0) await sleep(pauseMs);
    const started = performance.now();
    const turn = Array.from({ length: perTurn }, () => {
      const [subjects, cost] = next(i++);
      return limiter.consume(subjects, cost, clock());
    });
    stats.atOnce += turn.filter((d) => !(d instanceof Promise)).length;
    decisions.push(...(await Promise.all(turn)));
    stats.turnMs.push(performance.now() - started);
  }
  return decisions;
}
