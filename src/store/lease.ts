/**
 * Work only one replica at a time may do (the webhook delivery worker), held in the database the work
 * reads and writes: one `leases` row per name, with its holder and an expiry the holder pushes back on
 * each renewal. A holder that dies is replaced once its lease expires. The lease saves duplicate work;
 * the work itself must stay correct when a holder outlives its lease unawares (a long pause).
 */
import type { Db } from './db.js';

export class Lease {
  /** Until when this holder knows it holds the lease (its own clock); 0: it does not. */
  private heldUntil = 0;

  constructor(
    private readonly db: Db,
    private readonly name: string,
    /** Unique to this process. */
    readonly holder: string,
    private readonly ttlMs: number,
    private readonly clock: () => number,
  ) {}

  /**
   * Takes the lease, or renews it when this holder has it and half of it has passed (a write every
   * few seconds, not every call); false while another holder's runs.
   */
  async acquire(): Promise<boolean> {
    const now = this.clock();
    if (now < this.heldUntil - this.ttlMs / 2) return true;
    const held = await this.db
      .insertInto('leases')
      .values({ name: this.name, holder: this.holder, expires_at: new Date(now + this.ttlMs) })
      .onConflict((conflict) =>
        conflict
          .column('name')
          .doUpdateSet((row) => ({
            holder: row.ref('excluded.holder'),
            expires_at: row.ref('excluded.expires_at'),
          }))
          .where((row) =>
            row.or([row('leases.holder', '=', this.holder), row('leases.expires_at', '<', new Date(now))]),
          ),
      )
      .returning('holder')
      .executeTakeFirst();
    this.heldUntil = held === undefined ? 0 : now + this.ttlMs;
    return held !== undefined;
  }

  /** Lets another replica take over at once (at shutdown). */
  async release(): Promise<void> {
    this.heldUntil = 0;
    await this.db
      .deleteFrom('leases')
      .where('name', '=', this.name)
      .where('holder', '=', this.holder)
      .execute();
  }
}
