import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import { defineRestoreScript, type RestoreScript } from './restore-script.js';

/**
 * What this replica has taken of each current window's count (admitted requests and leased places,
 * less the places it gave back), so that a Redis that restarts empty (no persistence) does not reset
 * the windows. Redis carries a marker, `<prefix>epoch`, set once by whichever replica finds it
 * missing; each replica reads it whenever its connection becomes ready, which a restart forces (it
 * drops every connection), so no request pays for the check. A marker that changed means Redis lost
 * its data: every replica then puts back what it had taken in the windows still running, so the
 * counts add up again, less only what replicas that died meanwhile had.
 *
 * Conservative by a moment: places a replica takes between reconnecting and putting back (a round
 * trip or two) are in the new count and are put back too, so around a restart a window can admit
 * that many requests fewer than its limit, never more.
 */
export class WindowLedger {
  private readonly taken = new Map<string, { places: number; readonly expiresAt: number }>();
  private readonly restore: RestoreScript;
  private readonly epochKey: string;
  private epoch: string | undefined;
  private checking = false;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
  ) {
    this.restore = defineRestoreScript(client);
    this.epochKey = prefix + 'epoch';
  }

  /** Places taken (or, negative, given back) in the window counted at `name`, which expires at `expiresAt`. */
  add(name: string, places: number, expiresAt: number): void {
    if (places === 0) return;
    const entry = this.taken.get(name);
    if (entry === undefined) this.taken.set(name, { places, expiresAt });
    else entry.places += places;
  }

  /**
   * Reads the marker; when Redis restarted empty since the last read, puts back what this replica had
   * taken in every window still running. Resolves how many windows it put back. Never rejects.
   */
  async check(nowMs: number): Promise<number> {
    if (this.checking) return 0;
    this.checking = true;
    try {
      for (const [name, entry] of this.taken) if (entry.expiresAt <= nowMs) this.taken.delete(name);
      let current = (await this.client.get(this.epochKey)) ?? undefined;
      if (current === undefined) {
        const mine = randomBytes(12).toString('base64url');
        current = (await this.client.set(this.epochKey, mine, 'NX')) === 'OK' ? mine : ((await this.client.get(this.epochKey)) ?? mine);
      }
      const restarted = this.epoch !== undefined && current !== this.epoch;
      this.epoch = current;
      if (!restarted) return 0;
      let restored = 0;
      for (const [name, entry] of this.taken) {
        if (entry.places <= 0) continue;
        await this.restore(name, entry);
        restored++;
      }
      return restored;
    } catch {
      // Redis does not answer: the next check, a second from now or when it is ready again, reads it.
      return 0;
    } finally {
      this.checking = false;
    }
  }
}
