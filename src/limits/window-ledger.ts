import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import { COUNT_SURE_MS } from './core/window-lease.lua.js';
import { defineRestoreScript, type RestoreScript } from './restore-script.js';

/**
 * What else a replica puts back when Redis lost its data (balances, token buckets, concurrency places):
 * `owe` when the marker changed, `repay` at every check (it puts back what is owed; throws when Redis
 * stops answering, to go on at the next check).
 */
export interface LossShare {
  owe(): void;
  repay(nowMs: number): Promise<number>;
}

/**
 * What this replica has taken of each current window's count (admitted requests and leased places,
 * less the places it gave back), so that a Redis that loses its data (a restart without persistence,
 * `FLUSHALL`, `FLUSHDB`) does not reset the windows. Redis carries a marker, `<prefix>epoch`, set once by
 * whichever replica finds it missing; each replica reads it
 * whenever its connection becomes ready, which a restart forces (it drops every connection), and
 * every second (loss-detection.ts), so no request pays for the check. A marker that changed means
 * Redis lost its data: every replica then puts back what it had taken in the windows still running, so
 * the counts add up again, less only what replicas that died meanwhile had admitted. Each put-back
 * stamps the count with the marker (restore-script.ts): a replica that has not read it yet finds the
 * count lost rather than deciding against one still short of its own places.
 *
 * Conservative by a moment: places a replica takes between reconnecting and putting back (a round
 * trip or two) are in the new count and are put back too, so around a restart a window can admit
 * that many requests fewer than its limit, never more.
 */
interface Taken {
  /** The count key, and for a sliding limit the slot within it (-1 for a fixed window). */
  readonly count: string;
  readonly slot: number;
  places: number;
  readonly expiresAt: number;
}

export class WindowLedger {
  private readonly taken = new Map<string, Taken>();
  private readonly restore: RestoreScript;
  private readonly epochKey: string;
  private epoch: string | undefined;
  private checking: Promise<number> | undefined;
  /** Windows a restart emptied that are not put back yet (a check Redis stopped answering midway). */
  private readonly owed = new Set<string>();
  /** The last check did not finish: Redis did not answer. */
  private unfinished = false;
  /** How many times this replica found the marker changed. */
  private changes = 0;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
    /** Balances, buckets and places are put back after a restart too, each by its own rule. */
    private readonly shares: readonly LossShare[] = [],
    /** Told as soon as the marker is found changed, before anything is put back. */
    private readonly onLoss: () => void = () => {},
  ) {
    this.restore = defineRestoreScript(client);
    this.epochKey = prefix + 'epoch';
  }

  /**
   * Places taken (or, negative, given back) in the window counted at `count` (in `slot` of it for a
   * sliding limit, else -1), which expires at `expiresAt`.
   */
  add(count: string, slot: number, places: number, expiresAt: number): void {
    if (places === 0) return;
    const name = slot < 0 ? count : `${count}#${slot}`;
    const entry = this.taken.get(name);
    if (entry === undefined) this.taken.set(name, { count, slot, places, expiresAt });
    else entry.places += places;
  }

  /** Whether the last check did not finish (Redis stopped answering): the caller checks again soon. */
  get unfinishedCheck(): boolean {
    return this.unfinished;
  }

  /** Redis' marker as this replica last read it (undefined before the first read). */
  get marker(): string | undefined {
    return this.epoch;
  }

  /** How many times the marker was found changed: Redis lost its data. */
  get losses(): number {
    return this.changes;
  }

  /**
   * What this replica knows of `count` (in `slot` of it, or -1) as the consume script takes it,
   * `places:marker`: the places it holds there less `returning` (given back by a call under way), while
   * the count is sure to be there at `nowMs` (a second before its window or slot ends, for clocks a
   * little apart), else 0; and Redis' marker as it last read it ('' before the first read), which a
   * count put back under another marker is lost to (restore-script.ts).
   */
  knownOf(count: string, slot: number, nowMs: number, returning: number): string {
    const entry = this.taken.get(slot < 0 ? count : `${count}#${slot}`);
    const places = entry === undefined || nowMs >= entry.expiresAt - COUNT_SURE_MS ? 0 : entry.places;
    return `${Math.max(0, places - returning)}:${this.epoch ?? ''}`;
  }

  /** What this replica took of `count` is under `to` now: a key's counts moved (key-homes.ts). */
  move(count: string, to: string): void {
    for (const [name, entry] of this.taken)
      if (entry.count === count) {
        this.taken.delete(name);
        this.owed.delete(name);
        this.add(to, entry.slot, entry.places, entry.expiresAt);
      }
  }

  /** Puts back what this replica took of `count` (every slot of it), which Redis lost alone. */
  async putBack(count: string, nowMs: number): Promise<number> {
    let restored = 0;
    for (const entry of this.taken.values())
      if (entry.count === count && entry.places > 0 && entry.expiresAt > nowMs) {
        await this.restore(entry.count, { ...entry, marker: this.epoch });
        restored++;
      }
    return restored;
  }

  /**
   * Reads the marker; when Redis restarted empty since the last read, puts back what this replica had
   * taken in every window still running, and what an unfinished check still owed, and its shares
   * (the balances it saw, its records of token buckets, its concurrency places). Resolves how many windows and balances it put back. Never rejects: a check Redis stops
   * answering is left unfinished, and the next one goes on from where it stopped (a window whose
   * put-back timed out but ran is put back twice: it then admits fewer than its limit, never more; a
   * balance's put-back can be repeated without effect).
   */
  check(nowMs: number): Promise<number> {
    // One at a time: a caller that comes meanwhile waits for the check under way.
    this.checking ??= this.checkNow(nowMs).finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkNow(nowMs: number): Promise<number> {
    try {
      for (const [name, entry] of this.taken) {
        if (entry.expiresAt > nowMs) continue;
        this.taken.delete(name);
        this.owed.delete(name);
      }
      let current = (await this.client.get(this.epochKey)) ?? undefined;
      if (current === undefined) {
        const mine = randomBytes(12).toString('base64url');
        current =
          (await this.client.set(this.epochKey, mine, 'NX')) === 'OK'
            ? mine
            : ((await this.client.get(this.epochKey)) ?? mine);
      }
      if (this.epoch !== undefined && current !== this.epoch) {
        for (const name of this.taken.keys()) this.owed.add(name);
        for (const share of this.shares) share.owe();
        this.changes++;
        this.onLoss();
      }
      this.epoch = current;
      let restored = 0;
      for (const name of this.owed) {
        const entry = this.taken.get(name);
        if (entry !== undefined && entry.places > 0) {
          await this.restore(entry.count, { ...entry, marker: this.epoch });
          restored++;
        }
        this.owed.delete(name);
      }
      for (const share of this.shares) restored += await share.repay(nowMs);
      this.unfinished = false;
      return restored;
    } catch {
      this.unfinished = true;
      return 0;
    }
  }
}
