/**
 * What a replica answers about an admin token it read recently (admin-token-lookup.ts): the database
 * is asked at most once per ADMIN_TOKEN_RECHECK_MS for a token in use, a deletion on this replica is
 * seen at once, and neither an unknown token nor one read while a deletion ran is kept.
 */
import { ADMIN_TOKEN_RECHECK_MS, AdminTokenLookup } from '../../src/management/admin-token-lookup.js';
import type { AdminTokenRow } from '../../src/store/admin-token-repository.js';

/** Admin tokens in memory by hash, counting the reads the lookup makes (the database's work). */
function tokenTable() {
  const rows = new Map<string, AdminTokenRow>();
  let reads = 0;
  /** While set, a read has found its row but answers only once this settles (a query still running). */
  let gate: Promise<void> | undefined;
  return {
    rows,
    reads: () => reads,
    /** Holds reads from now on; the returned function lets them answer. */
    holdReads(): () => void {
      let release!: () => void;
      gate = new Promise<void>((resolve) => (release = resolve));
      return release;
    },
    async findByHash(hash: Buffer) {
      reads++;
      const row = rows.get(hash.toString('hex'));
      await gate;
      return row;
    },
  };
}

const token = (id: string): AdminTokenRow => ({
  id,
  name: id,
  scopes: ['keys:verify'],
  expiresAt: null,
  createdAt: new Date(0),
});

it('reads a token in use from the database once per recheck interval', async () => {
  const table = tokenTable();
  let now = 1_000;
  const lookup = new AdminTokenLookup(table, () => now);
  const hash = Buffer.from('aa', 'hex');
  table.rows.set('aa', token('tok_a'));
  for (let i = 0; i < 100; i++) expect((await lookup.findByHash(hash))?.id).toBe('tok_a');
  expect(table.reads()).toBe(1);
  now += ADMIN_TOKEN_RECHECK_MS - 1;
  await lookup.findByHash(hash);
  expect(table.reads()).toBe(1);
  // Deleted by another replica: this one reads it again once the interval is over, and refuses it.
  table.rows.delete('aa');
  now += 1;
  expect(await lookup.findByHash(hash)).toBeUndefined();
  expect(table.reads()).toBe(2);
});

it('refuses a token deleted on this replica at once, and keeps no unknown token', async () => {
  const table = tokenTable();
  const lookup = new AdminTokenLookup(table, () => 0);
  const hash = Buffer.from('bb', 'hex');
  expect(await lookup.findByHash(hash)).toBeUndefined();
  table.rows.set('bb', token('tok_b'));
  // Created elsewhere a moment after a miss: known at the next call.
  expect((await lookup.findByHash(hash))?.id).toBe('tok_b');
  table.rows.delete('bb');
  lookup.forget('tok_b');
  expect(await lookup.findByHash(hash)).toBeUndefined();
  expect(table.reads()).toBe(3);
});

it('does not keep a token read while a deletion on this replica ran', async () => {
  const table = tokenTable();
  const lookup = new AdminTokenLookup(table, () => 0);
  const hash = Buffer.from('cc', 'hex');
  table.rows.set('cc', token('tok_c'));
  const release = table.holdReads();
  const overlapping = lookup.findByHash(hash);
  table.rows.delete('cc');
  lookup.forget('tok_c');
  release();
  // The read began before the deletion committed and saw the token; it answers so but is not kept.
  expect((await overlapping)?.id).toBe('tok_c');
  expect(await lookup.findByHash(hash)).toBeUndefined();
});
