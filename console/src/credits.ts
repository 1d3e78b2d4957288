/**
 * A prepaid balance in an administrator's words (docs/guides/credits.md): what its refill does, and a
 * number of credits as typed, checked before anything is sent.
 */
import { formatNumber } from './format';
import type { CreditRefill } from './types';

/** The most a balance, a top-up or a refill can hold: 2^53−1, as the API takes it. */
export const MAX_CREDITS = Number.MAX_SAFE_INTEGER;

/**
 * `Refills to 1,000 on day 15 of each month, 00:00 UTC`, `Refills to 100 daily at 00:00 UTC`,
 * `No refill`. A refill sets the balance to its amount; it does not add up.
 */
export function refillText(refill: CreditRefill | null): string {
  if (refill === null) return 'No refill';
  const to = `Refills to ${formatNumber(refill.amount)}`;
  if (refill.interval === 'day') return `${to} daily at 00:00 UTC`;
  const day = refill.dayOfMonth ?? 1;
  return `${to} on day ${day} of each month, 00:00 UTC${day > 28 ? ' (a shorter month’s last day)' : ''}`;
}

/**
 * A whole number of credits as typed (`1500`, `1,500`), or what is wrong with it, in words. `least`:
 * the smallest number that makes sense here (1 for a top-up, 0 for a balance).
 */
export function parseCredits(
  text: string,
  what: string,
  least: 0 | 1 = 0,
): { value: number; problem?: undefined } | { value?: undefined; problem: string } {
  const typed = text.trim();
  if (typed === '') return { problem: `Enter ${what}: a whole number of credits, such as 500.` };
  if (/^-\s*[\d,.]+$/.test(typed))
    return {
      problem: `${capitalised(what)} cannot be negative: enter ${least} or more${least === 1 ? ', or choose “Set to” to lower the balance' : ''}.`,
    };
  if (!/^(\d+|\d{1,3}(,\d{3})+)$/.test(typed))
    return {
      problem: `${capitalised(what)} must be a whole number of credits, such as 500: “${typed}” is not one.`,
    };
  const value = Number(typed.replaceAll(',', ''));
  if (value > MAX_CREDITS)
    return { problem: `${capitalised(what)} can be at most ${formatNumber(MAX_CREDITS)} credits.` };
  if (value < least)
    return {
      problem: `Adding 0 credits changes nothing: enter 1 or more, or choose “Set to” to set the balance to 0.`,
    };
  return { value };
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
