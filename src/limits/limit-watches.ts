import type { Metrics } from '../ops/metrics.js';
import type { Subject } from '../plans/subject.js';
import { CreditWatch } from './credit-watch.js';
import type { LimitNotices } from './limit-notices.js';
import { QuotaWatch } from './quota-watch.js';

/**
 * What the Redis limiter (redis-limiter.ts) tells beyond its decisions: quota thresholds and low or
 * empty balances as charged (to `notices`, absent: nowhere, at no cost), and each Redis command's
 * duration and errors (to `metrics`).
 */
export class LimitWatches {
  /** Low and exhausted balances (undefined: nobody listens). */
  readonly credits: CreditWatch | undefined;

  constructor(
    private readonly metrics: Metrics,
    private readonly notices: LimitNotices | undefined,
  ) {
    this.credits = notices && new CreditWatch(notices);
  }

  /** The quota thresholds of `subject`'s limits in the windows that start at `startMs`. */
  quotaWatch(subject: Subject, startMs: number): QuotaWatch | undefined {
    return QuotaWatch.of(subject.scope, subject.id, subject.plan.limits, startMs, this.notices);
  }

  /** `run`, timed and its failure counted as Redis `operation`. */
  async measure<T>(operation: string, run: () => Promise<T>): Promise<T> {
    const end = this.metrics.redisDuration.startTimer({ operation });
    try {
      return await run();
    } catch (err) {
      this.metrics.redisErrors.inc({ operation });
      throw err;
    } finally {
      end();
    }
  }
}
