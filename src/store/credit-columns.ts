/**
 * How a balance is stored on the key or consumer that holds it (sql/061): columns `credits_*`, read
 * under names that start with a prefix of the caller's choice and turned into the balance's record
 * (src/plans/balance.ts).
 */
import type { Balance, Refill } from '../plans/balance.js';

/** `<alias>.credits_epoch as <as>Epoch`, …: the columns of a balance from the table aliased `alias`. */
export function creditColumns<A extends string, P extends string>(alias: A, as: P) {
  return [
    `${alias}.credits_epoch as ${as}Epoch`,
    `${alias}.credits_granted as ${as}Granted`,
    `${alias}.credits_window as ${as}Window`,
    `${alias}.credits_spent as ${as}Spent`,
    `${alias}.credits_refill as ${as}Refill`,
    `${alias}.credits_low_at as ${as}LowAt`,
  ] as const;
}

/** Postgres' bigints arrive as text, SQLite's integers as numbers. */
type Numeric = string | number;

/** A holder's balance (null: none) and its epoch, from a row read with `creditColumns(…, as)`. */
export function creditsOfRow(row: object, as: string): { balance: Balance | null; epoch: number } {
  const value = (field: string) => (row as Record<string, unknown>)[as + field];
  const epoch = Number((value('Epoch') as Numeric | null) ?? 0);
  const granted = value('Granted') as Numeric | null;
  if (granted === null || granted === undefined) return { balance: null, epoch };
  const refill = value('Refill') as string | null;
  const lowAt = value('LowAt') as Numeric | null;
  return {
    epoch,
    balance: {
      epoch,
      window: Number(value('Window') as Numeric),
      granted: Number(granted),
      floor: Number(value('Spent') as Numeric),
      refill: refill === null ? null : (JSON.parse(refill) as Refill),
      lowAt: lowAt === null ? null : Number(lowAt),
    },
  };
}

/** The columns that store `balance` (null: none; `epoch` kept, so a later balance counts afresh). */
export function balanceColumns(balance: Balance | null, epoch: number) {
  return balance === null
    ? {
        credits_epoch: epoch,
        credits_granted: null,
        credits_window: 0,
        credits_spent: 0,
        credits_refill: null,
        credits_low_at: null,
      }
    : {
        credits_epoch: balance.epoch,
        credits_granted: balance.granted,
        credits_window: balance.window,
        credits_spent: balance.floor,
        credits_refill: balance.refill === null ? null : JSON.stringify(balance.refill),
        credits_low_at: balance.lowAt,
      };
}
