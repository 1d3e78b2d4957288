/**
 * Credits as the management API takes and shows them (docs/guides/credits.md): the balance a create, a
 * PATCH or a top-up stores, what a balance holds now (the limiter's count, shared by every replica),
 * and a change put in force for the next request on every replica.
 */
import { AppError } from '../../../errors.js';
import {
  balanceRescheduled,
  balanceSet,
  remainingOf,
  settle,
  type Balance,
  type Refill,
} from '../../../plans/balance.js';
import { planOf } from '../../../plans/plan.js';
import type { Scope, Subject } from '../../../plans/subject.js';
import type { ConsumerRow } from '../../../store/consumer-repository.js';
import type { KeyRow } from '../../../store/key-row.js';
import type { ManagementContext } from '../../context.js';
import type { Credits, CreditsUpdate } from './balance-schemas.js';
import { keySubjects } from '../plans/rate-limit-views.js';

/** A monthly refill that names no day comes on the 1st. */
const DEFAULT_DAY_OF_MONTH = 1;
const NO_LIMITS = planOf([]);

/**
 * The balance `input` gives a holder that has `held` at `nowMs` (null: none). With `remaining`, a new
 * count after `previousEpoch`; without it, `held` goes on counting with the new refill and `lowAt`
 * (a holder with no balance to go on is refused).
 */
export function balanceOfInput(
  input: NonNullable<CreditsUpdate> | null,
  held: Balance | null,
  previousEpoch: number,
  nowMs: number,
): Balance | null {
  if (input === null) return null;
  const refill = input.refill && {
    amount: input.refill.amount,
    interval: input.refill.interval,
    dayOfMonth: input.refill.dayOfMonth ?? DEFAULT_DAY_OF_MONTH,
  };
  const lowAt = input.lowAt ?? null;
  if (input.remaining !== undefined)
    return balanceSet(previousEpoch, input.remaining, refill ?? null, lowAt, nowMs);
  if (held === null) throw REMAINING_REQUIRED;
  return balanceRescheduled(held, refill ?? null, lowAt, nowMs);
}

const REMAINING_REQUIRED = new AppError(
  'validation_failed',
  'The request is not valid: credits.remaining is required where there is no balance to keep',
  [{ field: 'credits.remaining', message: 'is required where there is no balance to keep' }],
);

/**
 * Whether a create's or a PATCH's `credits` changes the holder's balance: a set with `remaining`
 * always does (a new count); one without, when it changes the refill or `lowAt`; removing one it
 * does not hold does not.
 */
export function setsCredits(held: Balance | null, input: CreditsUpdate | undefined): boolean {
  if (input === undefined) return false;
  if (input === null) return held !== null;
  if (input.remaining !== undefined || held === null) return true;
  const wanted = balanceOfInput(input, held, held.epoch, 0);
  return !sameRefill(wanted!.refill, held.refill) || wanted!.lowAt !== held.lowAt;
}

const sameRefill = (a: Refill | null, b: Refill | null): boolean =>
  a === null || b === null
    ? a === b
    : a.amount === b.amount && a.interval === b.interval && a.dayOfMonth === b.dayOfMonth;

/** A balance as the API shows it, holding `remaining`; a daily refill has no day of the month. */
export function creditsView(balance: Balance, remaining: number): Credits {
  const { refill, lowAt } = balance;
  return {
    remaining,
    refill:
      refill === null
        ? null
        : refill.interval === 'month'
          ? { amount: refill.amount, interval: 'month', dayOfMonth: refill.dayOfMonth }
          : { amount: refill.amount, interval: 'day' },
    lowAt,
  };
}

/** What the database's record of a balance says it holds at `nowMs` (exact right after a set). */
export const recordedCredits = (balance: Balance, nowMs: number): Credits =>
  creditsView(balance, remainingOf(settle(undefined, balance, nowMs)));

/** The decision a consumer's own balance is counted in (where it lives does not depend on its keys). */
export const consumerSubjects = (consumer: Pick<ConsumerRow, 'id' | 'balance'>): Subject[] | undefined =>
  consumer.balance === null
    ? undefined
    : [{ scope: 'consumer', id: consumer.id, plan: NO_LIMITS, balance: consumer.balance }];

/**
 * What the balance of `scope` among `subjects` holds now, as the limiter counts it for every replica;
 * null when it holds none. While the limiter cannot be read (Redis unreachable, when no balance is
 * spent), the database's record: what the replicas last saved, at most about a second behind.
 */
export async function heldCredits(
  ctx: ManagementContext,
  subjects: readonly Subject[] | undefined,
  scope: Scope,
): Promise<Credits | null> {
  const balance = subjects?.find((subject) => subject.scope === scope)?.balance;
  if (balance === undefined) return null;
  const now = ctx.clock();
  try {
    const states = await ctx.limiter.peekBalances(subjects!, now);
    return creditsView(balance, states.find((state) => state.scope === scope)!.remaining);
  } catch (err) {
    ctx.logger.warn(
      { scope, id: subjects!.find((s) => s.scope === scope)!.id, err: (err as Error).message },
      'credit balance unavailable from the limiter; answering the saved one',
    );
    return recordedCredits(balance, now);
  }
}

/** What a key's own balance holds now (null: none). */
export async function keyCredits(key: KeyRow, ctx: ManagementContext): Promise<Credits | null> {
  return key.balance === null ? null : heldCredits(ctx, await keySubjects(key, ctx), 'key');
}

/** What a consumer's balance holds now (null: none). */
export const consumerCredits = (consumer: ConsumerRow, ctx: ManagementContext): Promise<Credits | null> =>
  heldCredits(ctx, consumerSubjects(consumer), 'consumer');

/**
 * Puts the balances of `subjects`, just changed in the database, in force for the next request on
 * every replica. Should the limiter not answer, the change still comes into force: every replica's key
 * cache hears of it and passes the new record with its next request, which the limiter takes.
 */
export async function syncCredits(
  ctx: ManagementContext,
  subjects: readonly Subject[] | undefined,
): Promise<void> {
  if (subjects === undefined || !subjects.some((subject) => subject.balance !== undefined)) return;
  try {
    await ctx.limiter.syncBalances(subjects, ctx.clock());
  } catch (err) {
    ctx.logger.warn(
      { subjects: subjects.map(({ scope, id }) => `${scope}:${id}`), err: (err as Error).message },
      'credit change not pushed to the limiter; replicas take it with their next request',
    );
  }
}
