import type { RedisClient } from '../../redis/connect.js';
import { COUNT_SURE_MS } from '../core/window-lease.lua.js';
import type { MovedShare } from './key-homes.js';
import type { LossShare } from './loss-detection.js';
import type { RedisMarker } from './redis-marker.js';
import { defineRestoreScript, type RestoreScript } from './restore-script.js';
import type { WindowKnown } from '../consume-script.js';

/**
 * What this replica has taken of each current window's count (admitted requests and leased places,
 * less the places it gave back), so that a Redis that loses its data (a restart without persistence,
 * `FLUSHALL`, `FLUSHDB`) does not reset the windows: when Redis' marker changed (redis-marker.ts),
 * every replica puts back what it had taken in the windows still running, so the counts add up again,
 * less only what replicas that died meanwhile had admitted. Each put-back stamps the count with the
 * marker (restore-script.ts): a replica that has not read it yet finds the count lost rather than
 * deciding against one still short of its own places.
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

export class WindowLedger implements LossShare, MovedShare {
  private readonly taken = new Map<string, Taken>();
  private readonly restore: RestoreScript;
  /** Windows a restart emptied that are not put back yet (a check Redis stopped answering midway). */
  private readonly owed = new Set<string>();

  constructor(
    client: RedisClient,
    private readonly marker: RedisMarker,
  ) {
    this.restore = defineRestoreScript(client);
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

  /**
   * What this replica knows of `count` (in `slot` of it, or -1) as the consume script takes it: the
   * places it holds there less `returning` (given back by a call under way), while
   * the count is sure to be there at `nowMs` (a second before its window or slot ends, for clocks a
   * little apart), else 0; and Redis' marker as it last read it ('' before the first read), which a
   * count put back under another marker is lost to (restore-script.ts).
   */
  knownOf(count: string, slot: number, nowMs: number, returning: number): WindowKnown {
    const entry = this.taken.get(slot < 0 ? count : `${count}#${slot}`);
    const places = entry === undefined || nowMs >= entry.expiresAt - COUNT_SURE_MS ? 0 : entry.places;
    return { places: Math.max(0, places - returning), marker: this.marker.current ?? '' };
  }

  /** What this replica took of `count` is under `to` now: a key's counts moved (key-homes.ts). */
  moved(count: string, to: string): void {
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
        await this.restore(entry.count, { ...entry, marker: this.marker.current });
        restored++;
      }
    return restored;
  }

  /** Redis lost its data: every window still running is to be put back. */
  owe(): void {
    for (const name of this.taken.keys()) this.owed.add(name);
  }

  /** Forgets the windows over by `nowMs`, and puts back those owed. */
  async repay(nowMs: number): Promise<number> {
    for (const [name, entry] of this.taken) {
      if (entry.expiresAt > nowMs) continue;
      this.taken.delete(name);
      this.owed.delete(name);
    }
    let restored = 0;
    for (const name of this.owed) {
      const entry = this.taken.get(name);
      if (entry !== undefined && entry.places > 0) {
        await this.restore(entry.count, { ...entry, marker: this.marker.current });
        restored++;
      }
      this.owed.delete(name);
    }
    return restored;
  }
}
