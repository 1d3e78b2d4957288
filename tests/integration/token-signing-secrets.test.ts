/**
 * What signs a key's tokens, as stored (docs/decisions/0091, sql/090), on both storages: a roll keeps
 * the previous secret sealed with the end of its grace, a roll without grace keeps none, and a
 * rotation of SECRET_ENCRYPTION_KEY re-seals the previous secret too, so its tokens still work
 * with only the new key.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rotateSecrets } from '../../src/keys/rotate-secrets.js';
import {
  decryptSecret,
  encryptSecret,
  generateKeyId,
  generateSecret,
  hashSecret,
} from '../../src/keys/secret.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { STORAGES, type Storage } from '../helpers/management-storage.js';

describe.each(['embedded', 'postgres'] as const)('%s', (kind) => {
  let storage: Storage;
  let keys: KeyRepository;
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    keys = new KeyRepository(storage.handle.db);
  });
  afterAll(() => storage?.dispose());

  async function created(): Promise<{ id: string; secret: string }> {
    const id = generateKeyId();
    const secret = generateSecret();
    await keys.insert({
      id,
      name: 'page',
      secretHash: hashSecret(secret),
      secretCiphertext: encryptSecret(secret, oldKey),
      createdAt: new Date(),
    });
    return { id, secret };
  }

  async function rolled(id: string, graceUntil: Date | null): Promise<string> {
    const secret = generateSecret();
    await keys.roll(
      id,
      { hash: hashSecret(secret), ciphertext: encryptSecret(secret, oldKey) },
      graceUntil,
      new Date(),
    );
    return secret;
  }

  it('keeps a rolled key’s previous secret, sealed, until its grace; none after a roll without grace', async () => {
    const key = await created();
    const until = new Date(Date.now() + 60_000);
    const next = await rolled(key.id, until);
    const found = (await keys.findForToken(key.id))!;
    expect(found.key.id).toBe(key.id);
    expect(decryptSecret(found.secretCiphertext, [oldKey])).toBe(next);
    expect(decryptSecret(found.previous!.ciphertext, [oldKey])).toBe(key.secret);
    expect(found.previous!.untilMs).toBe(until.getTime());
    await rolled(key.id, null);
    expect((await keys.findForToken(key.id))!.previous).toBeNull();
    expect(await keys.findForToken('key_nobody')).toBeUndefined();
  });

  it('re-seals the previous secret with the new encryption key when secrets are rotated', async () => {
    const key = await created();
    const next = await rolled(key.id, new Date(Date.now() + 60_000));
    await rotateSecrets(keys, newKey, [oldKey, newKey]);
    const found = (await keys.findForToken(key.id))!;
    expect(decryptSecret(found.secretCiphertext, [newKey])).toBe(next);
    expect(decryptSecret(found.previous!.ciphertext, [newKey])).toBe(key.secret);
  });
});
