/**
 * Balances on keys and consumers (docs/guides/credits.md, sql/061_credits.sql): set and topped up in the
 * management API's transactions, and what the replicas saw spent saved back, so that a balance lives in the
 * database whatever becomes of Redis.
 */
import type { Balance } from '../plans/balance.js';
import type { Scope } from '../plans/subject.js';
import { balanceColumns, creditColumns, creditsOfRow } from './credit-columns.js';
import type { Db } from './db.js';

/** What a replica saw spent of a balance in one of its periods. */
export interface Spend {
  readonly scope: Scope;
  readonly id: string;
  readonly epoch: number;
  readonly window: number;
  readonly spent: number;
}

const TABLES = { key: 'api_keys', consumer: 'consumers' } as const;

export class CreditRepository {
  constructor(private readonly db: Db) {}

  /** Stores the balance of key or consumer `id` (null: it holds none, `epoch` kept); false when it does not exist. */
  async set(scope: Scope, id: string, balance: Balance | null, epoch: number, now: Date): Promise<boolean> {
    const result = await this.db
      .updateTable(TABLES[scope])
      .set({ ...balanceColumns(balance, epoch), last_updated: now })
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Raises each balance's saved spend to what was seen, where the balance is still in that period: a
   * save that comes late (after a set) or lower than another replica's changes nothing. A spend in a
   * later refill window of the same epoch (a refill came, and nothing changed the record since) moves
   * the record to that window, granted the refill amount, so a restart does not give back what was
   * spent since the refill.
   */
  async saveSpent(spends: readonly Spend[]): Promise<void> {
    if (spends.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      for (const { scope, id, epoch, window, spent } of spends) {
        const table = TABLES[scope];
        const saved = await trx
          .updateTable(table)
          .set({ credits_spent: spent })
          .where('id', '=', id)
          .where('credits_epoch', '=', epoch)
          .where('credits_window', '=', window)
          .where('credits_spent', '<', spent)
          .where('credits_granted', 'is not', null)
          .executeTakeFirst();
        if (saved.numUpdatedRows > 0n) continue;
        const row = await trx
          .selectFrom(table)
          .select(creditColumns(table, 'c'))
          .where('id', '=', id)
          .where('credits_epoch', '=', epoch)
          .where('credits_window', '<', window)
          .executeTakeFirst();
        const refill = row && creditsOfRow(row, 'c').balance?.refill;
        if (!refill) continue;
        await trx
          .updateTable(table)
          .set({ credits_window: window, credits_granted: refill.amount, credits_spent: spent })
          .where('id', '=', id)
          .where('credits_epoch', '=', epoch)
          .where('credits_window', '<', window)
          .execute();
      }
    });
  }
}
