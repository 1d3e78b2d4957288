import { randomUUID } from 'node:crypto';
import type { Db } from '../store/db.js';
import type { InFlightStore, ReservationRecord } from './store.js';

/**
 * A single node's requests in flight (in-flight.ts), in its database (sql/150_in_flight_requests.sql):
 * one process writes and takes them, and the next start takes what a killed one left. Nothing else
 * takes them while it runs, so no deadline is kept: a record lives until its request ends or the
 * process after it starts.
 */
export class DatabaseInFlightStore implements InFlightStore {
  readonly replica = randomUUID();

  constructor(private readonly db: Db) {}

  async write(records: readonly ReservationRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.db
      .insertInto('in_flight_requests')
      .values(records.map(({ id, holder, body }) => ({ id, holder, body })))
      .execute();
  }

  /** The database answers or fails: a record is never taken without the answer, so no token is needed. */
  async take(id: string): Promise<ReservationRecord | undefined> {
    const row = await this.db
      .deleteFrom('in_flight_requests')
      .where('id', '=', id)
      .returning(['id', 'holder', 'body'])
      .executeTakeFirst();
    return row && { ...row, deadlineMs: 0 };
  }

  async left(): Promise<ReservationRecord[]> {
    const rows = await this.db
      .deleteFrom('in_flight_requests')
      .where('holder', '<>', this.replica)
      .returning(['id', 'holder', 'body'])
      .execute();
    return rows.map((row) => ({ ...row, deadlineMs: 0 }));
  }
}
