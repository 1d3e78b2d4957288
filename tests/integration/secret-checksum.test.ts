/**
 * Checksummed secrets at the proxy (contract section 31): a wrong checksum is refused without asking
 * the database (shown with the database down: anything that asks it answers 503), counted against the
 * address's wrong-key budget; secrets of older shapes and prefixes keep working.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../../src/keys/secret.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

/** `secret` with its last checksum character changed: the same shape, a wrong checksum. */
const withWrongChecksum = (secret: string) => secret.slice(0, -1) + (secret.endsWith('0') ? '1' : '0');

let h: ProxyHarness;
afterEach(async () => {
  h.databaseUp();
  await h.stop();
});
afterAll(closeDatabase);

async function call(secret: string): Promise<{ status: number; code: unknown }> {
  const res = await fetch(`${h.base}/v1/items`, { headers: { 'x-api-key': secret } });
  const body = (await res.json().catch(() => ({}))) as { code?: unknown };
  return { status: res.status, code: body.code };
}

/** A key stored with `secret` as it is, of whatever shape. */
async function keyWithSecret(secret: string): Promise<void> {
  await h.keys.insert({
    id: generateKeyId(),
    name: 'older',
    secretHash: hashSecret(secret),
    secretCiphertext: encryptSecret(secret, h.encryptionKey),
    createdAt: new Date(),
  });
}

describe('a secret whose checksum is wrong', () => {
  it('is refused as 401 invalid_api_key without a database query, while one of good shape needs the database', async () => {
    h = await new ProxyHarness().start();
    const { secret } = await h.createKey();
    h.databaseDown();
    for (let i = 0; i < 20; i++)
      expect(await call(withWrongChecksum(generateSecret()))).toEqual({
        status: 401,
        code: 'invalid_api_key',
      });
    expect(await call(withWrongChecksum(secret))).toEqual({ status: 401, code: 'invalid_api_key' });
    // The same shape with a right checksum is looked up: with the database down, that is a 503.
    expect(await call(generateSecret())).toEqual({ status: 503, code: 'auth_unavailable' });
  });

  it("spends the address's wrong-key budget: past it, 429, while keys memory knows keep working", async () => {
    h = await new ProxyHarness().start();
    const { secret } = await h.createKey();
    expect((await call(secret)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 101; i++) statuses.push((await call(withWrongChecksum(generateSecret()))).status);
    expect(statuses.slice(0, 100).every((status) => status === 401)).toBe(true);
    expect(statuses[100]).toBe(429);
    expect(await call(generateSecret())).toEqual({ status: 429, code: 'too_many_failed_attempts' });
    expect((await call(secret)).status).toBe(200);
  });

  it('leaves older secrets working: the shape before checksums, and checksummed ones of a former KEY_PREFIX', async () => {
    h = await new ProxyHarness().start({ env: { KEY_PREFIX: 'acme_live_' } });
    const beforeChecksums = 'tg_' + randomBytes(32).toString('base64url');
    const formerPrefix = generateSecret('tg_');
    await keyWithSecret(beforeChecksums);
    await keyWithSecret(formerPrefix);
    expect((await call(beforeChecksums)).status).toBe(200);
    expect((await call(formerPrefix)).status).toBe(200);
    h.databaseDown();
    expect(await call(withWrongChecksum(generateSecret('acme_live_')))).toEqual({
      status: 401,
      code: 'invalid_api_key',
    });
  });
});
