import { decryptSecret, encryptSecret } from './secret.js';

/** Where secrets are stored sealed: keys' secrets, billing exports' credentials. */
export interface SealedSecrets {
  allCiphertexts(): Promise<{ id: string; secretCiphertext: Uint8Array }[]>;
  updateCiphertext(id: string, ciphertext: Buffer): Promise<void>;
}

/**
 * Re-seals every stored secret with `currentKey`, opening each with whichever of `allKeys` sealed it.
 * Safe to run while replicas serve: they hold both keys during the rotation, and each row is
 * rewritten on its own, so a crash mid-way leaves every row readable. Returns how many rows changed.
 */
export async function rotateSecrets(
  store: SealedSecrets,
  currentKey: Buffer,
  allKeys: readonly Buffer[],
): Promise<number> {
  let rotated = 0;
  for (const row of await store.allCiphertexts()) {
    const secret = decryptSecret(row.secretCiphertext, allKeys);
    await store.updateCiphertext(row.id, encryptSecret(secret, currentKey));
    rotated++;
  }
  return rotated;
}
