import { decryptSecret, encryptSecret } from '../keys/secret.js';
import type { KeyRepository } from './key-repository.js';

/**
 * Re-seals every stored secret with `currentKey`, opening each with whichever of `allKeys` sealed it.
 * Safe to run while replicas serve: they hold both keys during the rotation, and each row is
 * rewritten on its own, so a crash mid-way leaves every row readable. Returns how many rows changed.
 */
export async function rotateSecrets(keys: KeyRepository, currentKey: Buffer, allKeys: readonly Buffer[]): Promise<number> {
  let rotated = 0;
  for (const row of await keys.allCiphertexts()) {
    const secret = decryptSecret(row.secretCiphertext, allKeys);
    await keys.updateCiphertext(row.id, encryptSecret(secret, currentKey));
    rotated++;
  }
  return rotated;
}
