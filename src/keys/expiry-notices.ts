/**
 * `key.expiring` (docs/guides/webhooks.md): once per key and threshold, 7 days and 1 day before its
 * `expiresAt`. A key whose expiry is already nearer than 7 days when it is set gets only the nearest
 * notice still ahead of it (a key expiring in 12 hours: the 1-day one). Each notice is emitted under a
 * once-key naming the key, its expiry and the threshold, so it is emitted once across every replica and
 * run, and again only if the expiry is moved.
 */
import { Outbox, type NewEvent } from '../store/outbox.js';
import type { Db } from '../store/db.js';
import { KeyRepository } from '../store/key-repository.js';
import type { KeyRow } from '../store/key-row.js';

const DAY_MS = 86_400_000;
/** Days before the expiry, nearest first. */
export const EXPIRY_NOTICE_DAYS = [1, 7] as const;
const HORIZON_MS = Math.max(...EXPIRY_NOTICE_DAYS) * DAY_MS;

/** The event's data for a key and the threshold reached (the same key image as every `key.*` event). */
export type ExpiringKeyData = (key: KeyRow, daysBefore: number) => string;

export class ExpiryNotices {
  constructor(
    private readonly db: Db,
    private readonly dataOf: ExpiringKeyData,
  ) {}

  /** Emits the notices due at `now` that no one emitted yet; returns how many. */
  async emitDue(now: Date): Promise<number> {
    const keys = await new KeyRepository(this.db).expiringBetween(now, new Date(now.getTime() + HORIZON_MS));
    const candidates = keys.map((key) => {
      const left = key.expiresAt!.getTime() - now.getTime();
      const days = EXPIRY_NOTICE_DAYS.find((d) => left <= d * DAY_MS)!;
      return {
        key,
        days,
        once: { key: `key.expiring:${key.id}:${key.expiresAt!.getTime()}:${days}`, until: key.expiresAt! },
      };
    });
    const done = await new Outbox(this.db).usedOnceKeys(candidates.map((c) => c.once.key));
    const due: NewEvent[] = candidates
      .filter((c) => !done.has(c.once.key))
      .map((c) => ({ type: 'key.expiring', data: this.dataOf(c.key, c.days), at: now, once: c.once }));
    if (due.length === 0) return 0;
    const written = await this.db.transaction().execute((trx) => new Outbox(trx).add(due));
    return written.length;
  }
}
