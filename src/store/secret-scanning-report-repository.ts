/**
 * GitHub's secret scanning reports handled lately (sql/135), so that a report sent again, to any
 * replica, is answered as it was and changes nothing. Used inside the transaction that handles the
 * report: a second copy arriving meanwhile waits on the first's row until it commits.
 */
import type { Db } from './db.js';

export class SecretScanningReportRepository {
  constructor(private readonly db: Db) {}

  /**
   * Takes the report whose body hashes to `bodyHash` for handling: undefined when no report of that
   * body was handled since `since` (it is now, and `answer` records what it was answered); else the
   * answer given to it then. Reports older than `since` are forgotten on the way.
   */
  async claim(bodyHash: Buffer, now: Date, since: Date): Promise<string | undefined> {
    await this.db.deleteFrom('secret_scanning_reports').where('received_at', '<', since).execute();
    const claimed = await this.db
      .insertInto('secret_scanning_reports')
      .values({ body_hash: bodyHash, answer: '', received_at: now })
      .onConflict((conflict) => conflict.column('body_hash').doNothing())
      .returning('body_hash')
      .executeTakeFirst();
    if (claimed !== undefined) return undefined;
    const earlier = await this.db
      .selectFrom('secret_scanning_reports')
      .select('answer')
      .where('body_hash', '=', bodyHash)
      .executeTakeFirst();
    return earlier?.answer;
  }

  /** What the report claimed by `claim` was answered. */
  async answer(bodyHash: Buffer, answer: string): Promise<void> {
    await this.db
      .updateTable('secret_scanning_reports')
      .set({ answer })
      .where('body_hash', '=', bodyHash)
      .execute();
  }
}
