/**
 * `credits.low` and `credits.exhausted` as the limiters charge balances (docs/guides/webhooks.md,
 * docs/decisions/0052). A balance is low once it holds less than its `lowAt` (else a tenth of its
 * refill amount: lowThresholdOf), and exhausted once it can pay no more: a charge left it at 0, or it
 * refused a request for want of credits. Each is told once per balance period (a set, a refill and a
 * top-up each start one: the balance was made whole again). The request path pays one comparison while
 * the balance is above both levels; below them, a look-up of what was told already.
 */
import { lowThresholdOf, type Balance } from '../plans/balance.js';
import type { Scope } from '../plans/subject.js';
import type { BalancePeriod, LimitNotices } from './limit-notices.js';

const LOW = 1;
const EXHAUSTED = 2;

/** The period of a balance last told of, and what was told in it. */
interface Told extends BalancePeriod {
  flags: number;
}

export class CreditWatch {
  private readonly told: Record<Scope, Map<string, Told>> = { key: new Map(), consumer: new Map() };

  constructor(private readonly notices: LimitNotices) {}

  /**
   * A balance of `scope`/`id` holds `remaining` in `period` at `nowMs`, after a charge or after refusing
   * a request (`refused`) for want of credits.
   */
  saw(
    scope: Scope,
    id: string,
    balance: Balance,
    period: BalancePeriod,
    remaining: number,
    refused: boolean,
    nowMs: number,
  ): void {
    const lowAt = lowThresholdOf(balance);
    const low = lowAt !== null && remaining < lowAt;
    const exhausted = refused || remaining === 0;
    if (!low && !exhausted) return;
    const byId = this.told[scope];
    let told = byId.get(id);
    if (
      told === undefined ||
      told.epoch !== period.epoch ||
      told.window !== period.window ||
      told.granted !== period.granted
    ) {
      told = { epoch: period.epoch, window: period.window, granted: period.granted, flags: 0 };
      byId.set(id, told);
    }
    if (low && (told.flags & LOW) === 0) {
      told.flags |= LOW;
      this.notices.creditsLow(scope, id, balance, period, remaining, lowAt, nowMs);
    }
    if (exhausted && (told.flags & EXHAUSTED) === 0) {
      told.flags |= EXHAUSTED;
      this.notices.creditsExhausted(scope, id, balance, period, remaining, nowMs);
    }
  }
}
