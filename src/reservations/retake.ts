/**
 * Taking a record again whose take Redis may have run without its answer reaching here (a hang,
 * docs/decisions/0213): the same token gets it again, nobody else does, so whoever gets it counts it
 * once.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../ops/logger.js';
import { retrying } from '../ops/retrying.js';
import type { ReservationRecord, ReservationStore } from './store.js';

/**
 * A call that took a record but lost Redis's answer takes it again, after RETAKE_FIRST_MS, then twice
 * as long up to RETAKE_MOST_MS, for RETAKE_MS; the record stays for it TAKEN_KEPT_MS (redis-store.ts).
 */
const RETAKE_FIRST_MS = 100;
const RETAKE_MOST_MS = 2_000;
const RETAKE_MS = 60_000;
export const TAKEN_KEPT_MS = 5 * RETAKE_MS;

export const randomToken = (): string => randomBytes(12).toString('base64url');

/**
 * The record of `id` for `token`, taken again until Redis answers (RETAKE_MS at most): undefined when
 * it is gone (taken by another call, swept) or Redis never answered.
 */
export async function takenLater(
  store: Pick<ReservationStore, 'take'>,
  id: string,
  token: string,
  clock: () => number,
  logger: Logger,
): Promise<ReservationRecord | undefined> {
  try {
    return await retrying(() => store.take(id, token, clock() + TAKEN_KEPT_MS), {
      firstMs: RETAKE_FIRST_MS,
      mostMs: RETAKE_MOST_MS,
      giveUpMs: RETAKE_MS,
    });
  } catch (err) {
    logger.error({ err, reservationId: id }, 'a reservation Redis never answered for');
    return undefined;
  }
}
