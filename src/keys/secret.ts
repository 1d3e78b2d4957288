import { createCipheriv, createDecipheriv, hash, randomBytes } from 'node:crypto';
import { generateChecksummedSecret, hasSecretShape } from './secret-format.js';

export { maskSecret } from './secret-format.js';
/** A key id as the management API takes one (generated, or given when keys are imported). */
const KEY_ID_PATTERN = /^[A-Za-z0-9._~:-]{1,128}$/;

/** Recognisable in logs, configs and secret scanners by its prefix and checksum (secret-format.ts). */
export function generateSecret(prefix?: string): string {
  return generateChecksummedSecret(prefix);
}

/** Key ids are public (they appear in URLs and in `x-consumer-api-key-id`), so they carry no secret. */
export function generateKeyId(): string {
  return 'key_' + randomBytes(16).toString('base64url');
}

/** Cheap shape check: a token's `kid` that can't be a key id never reaches the database. */
export function looksLikeKeyId(candidate: string): boolean {
  return KEY_ID_PATTERN.test(candidate);
}

/** Cheap shape check: a credential that can't be a secret never reaches a cache or the database. */
export function looksLikeSecret(candidate: string): boolean {
  return hasSecretShape(candidate);
}

/** SHA-256, one-shot: half the cost of a Hash object, on the path of every management call and key look-up. */
export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM; stored as IV || tag || ciphertext. */
export function encryptSecret(secret: string, key: Buffer): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
}

/**
 * Tries each key in turn (current first, then the previous ones during a rotation); the GCM tag
 * tells which one sealed the value.
 */
export function decryptSecret(sealed: Uint8Array, keys: readonly Buffer[]): string {
  const box = Buffer.from(sealed);
  const iv = box.subarray(0, IV_BYTES);
  const tag = box.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
  const ciphertext = box.subarray(IV_BYTES + TAG_BYTES);
  for (const key of keys) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      // Not sealed with this key: try the next one.
    }
  }
  throw new Error('secret cannot be decrypted with any configured SECRET_ENCRYPTION_KEY');
}
