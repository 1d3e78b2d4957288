import type { Db } from './db.js';

export interface AdminTokenRow {
  readonly id: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly expiresAt: Date | null;
  readonly createdAt: Date;
}

function toRow(row: {
  id: string;
  name: string;
  scopes: string;
  expiresAt: Date | null;
  createdAt: Date;
}): AdminTokenRow {
  return { ...row, scopes: row.scopes.split(' ').filter(Boolean) };
}

const columns = ['id', 'name', 'scopes', 'expires_at as expiresAt', 'created_at as createdAt'] as const;

/** Admin tokens: only a hash of each is kept; the token itself is shown once, at creation. */
export class AdminTokenRepository {
  constructor(private readonly db: Db) {}

  async insert(token: AdminTokenRow & { tokenHash: Buffer }): Promise<void> {
    await this.db
      .insertInto('admin_tokens')
      .values({
        id: token.id,
        name: token.name,
        scopes: token.scopes.join(' '),
        token_hash: token.tokenHash,
        expires_at: token.expiresAt,
        created_at: token.createdAt,
      })
      .execute();
  }

  /** Oldest first. */
  async list(): Promise<AdminTokenRow[]> {
    const rows = await this.db
      .selectFrom('admin_tokens')
      .select(columns)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toRow);
  }

  async findByHash(tokenHash: Buffer): Promise<AdminTokenRow | undefined> {
    const row = await this.db
      .selectFrom('admin_tokens')
      .select(columns)
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    return row && toRow(row);
  }

  /** The token as it was, or undefined when there was none. */
  async delete(id: string): Promise<AdminTokenRow | undefined> {
    const row = await this.db
      .deleteFrom('admin_tokens')
      .where('id', '=', id)
      .returning(columns)
      .executeTakeFirst();
    return row && toRow(row);
  }
}
