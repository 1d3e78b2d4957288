import { join } from 'node:path';
import { UsageJournal, type HeldBatch } from '../../../src/usage/journal.js';
import { waitFor } from '../../helpers/poll.js';

/** What DATA_DIR's usage journal holds for the next start to apply: nothing once its batches are applied. */
export function heldInJournal(dataDir: string): HeldBatch[] {
  return new UsageJournal(join(dataDir, 'usage-journal')).take();
}

/**
 * Resolves once a Tollgate on `dataDir` has applied what its journal held and emptied it (its first
 * write does both): from then on a restart has nothing left to apply, so it can be read at once.
 */
export async function journalEmptied(dataDir: string): Promise<void> {
  await waitFor(
    () => Promise.resolve(heldInJournal(dataDir)),
    (held) => held.length === 0,
    { what: `the usage journal of ${dataDir} emptied by its first write` },
  );
}
