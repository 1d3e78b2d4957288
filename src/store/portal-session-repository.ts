import type { Db } from './db.js';

/** A portal user as the team's backend (or their ID token) names them. */
export interface PortalUserRow {
  readonly id: string;
  readonly email?: string;
  readonly name?: string;
}

export interface PortalSessionRow {
  readonly id: string;
  readonly consumerId: string;
  readonly user: PortalUserRow;
  readonly ttlSeconds: number;
  /** false: its sign-in code has not been exchanged yet. */
  readonly signedIn: boolean;
  readonly createdAt: Date;
  /** When the session ends; before sign-in, when its code stops working. */
  readonly expiresAt: Date;
}

export interface NewPortalSession {
  readonly id: string;
  readonly consumerId: string;
  readonly user: PortalUserRow;
  readonly ttlSeconds: number;
  readonly createdAt: Date;
  /** A sign-in link's code (hash), working until `codeExpiresAt`; absent: signed in at once (OIDC). */
  readonly code?: { readonly hash: Buffer; readonly expiresAt: Date };
  /** The session token (hash) of a session signed in at once. */
  readonly tokenHash?: Buffer;
}

const columns = [
  'portal_sessions.id as id',
  'portal_sessions.consumer_id as consumerId',
  'user_id as userId',
  'user_email as userEmail',
  'user_name as userName',
  'ttl_seconds as ttlSeconds',
  'token_hash as tokenHash',
  'portal_sessions.created_at as createdAt',
  'expires_at as expiresAt',
] as const;

interface Selected {
  id: string;
  consumerId: string;
  userId: string;
  userEmail: string | null;
  userName: string | null;
  ttlSeconds: number;
  tokenHash: Uint8Array | null;
  createdAt: Date;
  expiresAt: Date;
}

const toRow = (r: Selected): PortalSessionRow => ({
  id: r.id,
  consumerId: r.consumerId,
  user: {
    id: r.userId,
    ...(r.userEmail !== null && { email: r.userEmail }),
    ...(r.userName !== null && { name: r.userName }),
  },
  ttlSeconds: Number(r.ttlSeconds),
  signedIn: r.tokenHash !== null,
  createdAt: r.createdAt,
  expiresAt: r.expiresAt,
});

/**
 * Portal sessions (sql/100), read from the database at every use, so a session ended on one replica
 * is refused by every other at its next request (docs/decisions/0100). Codes and tokens only as hashes.
 */
export class PortalSessionRepository {
  constructor(private readonly db: Db) {}

  async insert(session: NewPortalSession): Promise<void> {
    const expiresAt =
      session.code?.expiresAt ?? new Date(session.createdAt.getTime() + session.ttlSeconds * 1000);
    await this.db
      .insertInto('portal_sessions')
      .values({
        id: session.id,
        consumer_id: session.consumerId,
        user_id: session.user.id,
        user_email: session.user.email ?? null,
        user_name: session.user.name ?? null,
        ttl_seconds: session.ttlSeconds,
        code_hash: session.code?.hash ?? null,
        code_expires_at: expiresAt,
        token_hash: session.tokenHash ?? null,
        created_at: session.createdAt,
        expires_at: expiresAt,
      })
      .execute();
  }

  /**
   * Exchanges a sign-in code, once: the session gets its token and lasts its ttl from `now`. Undefined:
   * no live code has that hash (used, expired, ended, or never issued).
   */
  async signIn(codeHash: Buffer, tokenHash: Buffer, now: Date): Promise<PortalSessionRow | undefined> {
    const found = await this.db
      .selectFrom('portal_sessions')
      .select(['id', 'ttl_seconds'])
      .where('code_hash', '=', codeHash)
      .where('code_expires_at', '>', now)
      .executeTakeFirst();
    if (!found) return undefined;
    // The code is cleared in the same statement that checks it is still there: used at most once.
    const updated = await this.db
      .updateTable('portal_sessions')
      .set({
        code_hash: null,
        token_hash: tokenHash,
        expires_at: new Date(now.getTime() + Number(found.ttl_seconds) * 1000),
      })
      .where('id', '=', found.id)
      .where('code_hash', '=', codeHash)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) return undefined;
    return this.byToken(tokenHash, now);
  }

  /** The live session of a token whose consumer still exists; undefined: none. */
  async byToken(tokenHash: Buffer, now: Date): Promise<PortalSessionRow | undefined> {
    const row = await this.db
      .selectFrom('portal_sessions')
      .innerJoin('consumers', 'consumers.id', 'portal_sessions.consumer_id')
      .select(columns)
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return row && toRow(row);
  }

  /** Sessions not yet ended (and links not yet used), newest first. */
  async listActive(consumerId: string | undefined, now: Date): Promise<PortalSessionRow[]> {
    let query = this.db.selectFrom('portal_sessions').select(columns).where('expires_at', '>', now);
    if (consumerId !== undefined) query = query.where('consumer_id', '=', consumerId);
    const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
    return rows.map(toRow);
  }

  /** Ends a session (or an unused link) still active; returns what it was. */
  async end(id: string, now: Date): Promise<PortalSessionRow | undefined> {
    const row = await this.db
      .selectFrom('portal_sessions')
      .select(columns)
      .where('id', '=', id)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    if (!row) return undefined;
    await this.db.deleteFrom('portal_sessions').where('id', '=', id).execute();
    return toRow(row);
  }

  /** Forgets sessions that ended before `before`. */
  async pruneEnded(before: Date): Promise<void> {
    await this.db.deleteFrom('portal_sessions').where('expires_at', '<', before).execute();
  }
}
