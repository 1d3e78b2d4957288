import type { AdminTokenRepository, AdminTokenRow } from '../store/admin-token-repository.js';

/** How long a replica trusts an admin token it read, before reading it again (docs/guides/admin-tokens-and-audit.md: within 1 s). */
export const ADMIN_TOKEN_RECHECK_MS = 500;

/** Tokens a replica keeps read at once (the oldest read is forgotten first). */
const MAX_READ_TOKENS = 1_000;

interface Read {
  readonly token: AdminTokenRow;
  readonly readAtMs: number;
}

/**
 * Admin tokens by hash, read from the database at most once per `ADMIN_TOKEN_RECHECK_MS` on each
 * replica: a token that calls verify on every request of a server would otherwise cost a query each.
 * A deletion elsewhere is refused here once the read ages out; one made on this replica is forgotten at
 * once (`forget`), and a read that overlapped a deletion is not kept. Unknown tokens are never kept, so a
 * token created elsewhere works at once.
 */
export class AdminTokenLookup {
  private readonly reads = new Map<string, Read>();
  private deletions = 0;

  constructor(
    private readonly tokens: Pick<AdminTokenRepository, 'findByHash'>,
    private readonly clock: () => number,
  ) {}

  async findByHash(tokenHash: Buffer): Promise<AdminTokenRow | undefined> {
    const hashText = tokenHash.toString('hex');
    const readAtMs = this.clock();
    const read = this.reads.get(hashText);
    if (read !== undefined && readAtMs - read.readAtMs < ADMIN_TOKEN_RECHECK_MS) return read.token;
    const deletionsBefore = this.deletions;
    const token = await this.tokens.findByHash(tokenHash);
    this.reads.delete(hashText);
    if (token !== undefined && this.deletions === deletionsBefore) {
      if (this.reads.size >= MAX_READ_TOKENS) this.reads.delete(this.reads.keys().next().value as string);
      this.reads.set(hashText, { token, readAtMs });
    }
    return token;
  }

  /** A token deleted on this replica (after the deletion committed): refused here from now on. */
  forget(tokenId: string): void {
    this.deletions++;
    for (const [hashText, read] of this.reads) if (read.token.id === tokenId) this.reads.delete(hashText);
  }
}
