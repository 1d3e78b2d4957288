import { mergeKeyUsage } from '../../src/usage/merge-usage.js';
import { emptyKeyUsage, type KeyUsage, type PendingUsage } from '../../src/usage/usage.js';

/** All of a key's pending parts added up; undefined when nothing is pending. */
export async function pendingTotal(source: PendingUsage, keyId: string): Promise<KeyUsage | undefined> {
  const parts = await source.pending(keyId);
  if (parts.length === 0) return undefined;
  const total = emptyKeyUsage();
  for (const part of parts) mergeKeyUsage(total, part.usage);
  return total;
}
