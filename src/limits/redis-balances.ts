import type { RedisClient } from '../redis/connect.js';
import { holdingOf, settle, windowOf, type Balance } from '../plans/balance.js';
import type { Subject } from '../plans/subject.js';
import { defineSyncBalanceScript, type BalanceTerms, type SyncBalanceScript } from './balance-lua.js';
import { balanceKey, countsBase, hashTagOf } from './limiter-keys.js';
import type { LimitWatches } from './limit-watches.js';
import { balanceStateOf, type BalanceState, type SpentBalance } from './rate-limiter.js';
import type { Recovery } from './recovery/recovery.js';

/**
 * The credit balances of the Redis limiter (redis-limiter.ts) outside a decision: read, brought up to
 * date after a top-up or a set, and what was spent (docs/decisions/0051). Decisions charge them in the
 * consume script (limit-batches.ts).
 */
export class RedisBalances {
  private readonly syncBalance: SyncBalanceScript;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    /** What this replica saw spent of each balance (recovery/balance-ledger.ts). */
    private readonly recovery: Pick<Recovery, 'balancesSpent'>,
    private readonly watches: LimitWatches,
  ) {
    this.syncBalance = defineSyncBalanceScript(client);
  }

  async peek(subjects: readonly Subject[], nowMs: number): Promise<BalanceState[]> {
    const hashTag = hashTagOf(subjects);
    return this.watches.measure('peek', () =>
      Promise.all(
        subjects
          .filter((subject) => subject.balance !== undefined)
          .map(async (subject) => {
            const key = balanceKey(countsBase(this.prefix, subject, hashTag));
            const [e, w, g, sp, b] = await this.client.hmget(key, 'e', 'w', 'g', 's', 'b');
            const held =
              e == null ? undefined : { epoch: +e, window: +w!, granted: +g!, spent: +sp!, base: +b! };
            const remaining = holdingOf(settle(held, subject.balance!, nowMs));
            return balanceStateOf(subject.scope, subject.balance!, remaining, nowMs);
          }),
      ),
    );
  }

  async sync(subjects: readonly Subject[], nowMs: number): Promise<void> {
    const hashTag = hashTagOf(subjects);
    await this.watches.measure('sync', () =>
      Promise.all(
        subjects
          .filter((subject) => subject.balance !== undefined)
          .map((subject) =>
            this.syncBalance(
              balanceKey(countsBase(this.prefix, subject, hashTag)),
              balanceTerms(subject.balance!, nowMs),
            ),
          ),
      ),
    );
  }

  spent(): SpentBalance[] {
    return this.recovery.balancesSpent();
  }
}

/** What a call passes of a balance's record at `now`. */
export function balanceTerms(balance: Balance, now: number): BalanceTerms {
  return {
    epoch: balance.epoch,
    window: balance.window,
    granted: balance.granted,
    floor: balance.floor,
    windowNow: windowOf(balance, now),
    refillAmount: balance.refill?.amount ?? -1,
  };
}
