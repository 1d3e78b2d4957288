/**
 * What the proxy does with a key's lifecycle (docs/guides/keys.md): disabled and expired keys are refused
 * without reaching the backend or spending quota and still count in usage; a rolled key's previous
 * secret opens the same key until its grace ends, then never again, with no message needed; and
 * every presented key's last use reaches the database.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KeyChangeFeed } from '../../src/keys/key-change-feed.js';
import { encryptSecret, generateSecret, hashSecret } from '../../src/keys/secret.js';
import { createLogger } from '../../src/ops/logger.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

describe('proxy: key lifecycle', () => {
  const h = new ProxyHarness();

  beforeAll(() => h.start(), 120_000);
  afterAll(() => h.stop());

  const call = (secret: string, path = '/v1/items') =>
    fetch(h.base + path, { headers: { 'x-api-key': secret } });
  const announce = (keyId: string) => h.events.publish({ kind: 'key', keyId });
  let audit: AuditRepository;
  beforeAll(() => {
    audit = new AuditRepository(h.db.db);
  });

  it('refuses a disabled key with 403 key_disabled: not forwarded, no quota spent, counted as failed', async () => {
    const key = await h.createKey({ limit: 1, period: 'day' });
    await h.keys.update(key.id, { enabled: false }, new Date(h.now));
    await announce(key.id);
    const forwarded = h.backend.received.length;
    for (let i = 0; i < 3; i++) {
      const res = await call(key.secret, '/v1/disabled');
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: 'The API key is disabled', code: 'key_disabled' });
    }
    expect(h.backend.received).toHaveLength(forwarded);
    expect(await h.usage(key.id)).toMatchObject({
      requests: 3,
      successful: 0,
      failed: 3,
      cost: 0,
      statusClasses: { '4xx': 3 },
      outcomes: { disabled: 3 },
    });

    // Enabled again, the day's single request is still there to spend.
    await h.keys.update(key.id, { enabled: true }, new Date(h.now));
    await announce(key.id);
    expect((await call(key.secret)).status).toBe(200);
    expect((await call(key.secret)).status).toBe(429);
  });

  it('refuses an expired key with 401 key_expired from the instant it expires, with no message', async () => {
    const key = await h.createKey({ limit: 5, period: 'day' });
    await h.keys.update(key.id, { expiresAt: new Date(h.now + 2_000) }, new Date(h.now));
    await announce(key.id);
    expect((await call(key.secret)).status).toBe(200);
    h.now += 1_999;
    expect((await call(key.secret)).status).toBe(200);
    h.now += 1;
    const res = await call(key.secret);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(await res.json()).toEqual({ error: 'The API key has expired', code: 'key_expired' });
    expect(await h.usage(key.id)).toMatchObject({
      requests: 3,
      successful: 2,
      failed: 1,
      cost: 2,
      statusClasses: { '2xx': 2, '4xx': 1 },
      outcomes: { expired: 1, disabled: 0 },
    });
    // The refusal spent no quota: 2 of 5 were used.
    await h.keys.update(key.id, { expiresAt: null }, new Date(h.now));
    await announce(key.id);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(key.secret)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('lets a rolled secret open the same key until its grace ends, and refuses it from then on', async () => {
    const key = await h.createKey({ limit: 100, period: 'day' });
    expect((await call(key.secret)).status).toBe(200); // cached as the current secret
    const next = generateSecret();
    const graceEnd = h.now + 5_000;
    await h.keys.roll(
      key.id,
      { hash: hashSecret(next), ciphertext: encryptSecret(next, h.encryptionKey) },
      new Date(graceEnd),
      new Date(h.now),
    );
    await announce(key.id);

    const forwarded = h.backend.received.length;
    expect((await call(key.secret)).status).toBe(200);
    expect((await call(next)).status).toBe(200);
    const seen = h.backend.received.slice(forwarded);
    expect(seen.map((r) => r.headers['x-consumer-api-key-id'])).toEqual([key.id, key.id]);
    expect(seen.map((r) => r.headers['x-api-key'])).toEqual([key.secret, next]);

    h.now = graceEnd - 1;
    expect((await call(key.secret)).status).toBe(200);
    h.now = graceEnd;
    const refused = await call(key.secret);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'invalid_api_key' });
    expect((await call(next)).status).toBe(200);
    // One key: every request of both secrets counts in its usage, the refused one not at all.
    expect(await h.usage(key.id)).toMatchObject({ requests: 5, successful: 5 });
  });

  it("doesn't serve a rolled secret past its grace while the database is down", async () => {
    const key = await h.createKey();
    const next = generateSecret();
    await h.keys.roll(
      key.id,
      { hash: hashSecret(next), ciphertext: encryptSecret(next, h.encryptionKey) },
      new Date(h.now + 1_000),
      new Date(h.now),
    );
    await announce(key.id);
    expect((await call(key.secret)).status).toBe(200);
    h.databaseDown();
    try {
      h.now += 1_000;
      expect((await call(key.secret)).status).toBe(503);
    } finally {
      h.databaseUp();
    }
  });

  it('ends a rolled secret cached as current at the stated instant though the change message was lost, from the recorded changes', async () => {
    const key = await h.createKey();
    expect((await call(key.secret)).status).toBe(200); // cached as the current secret, no end known
    const feed = new KeyChangeFeed(
      (since) => audit.keyChangesSince(since),
      (change) => void h.events.publish(change),
      createLogger('silent'),
      () => h.now,
    );
    await feed.poll();
    // Rolled elsewhere as the management API does it (the change and its entry in one transaction); no message.
    const next = generateSecret();
    const graceEnd = Math.ceil((h.now + 2_000) / 1000) * 1000;
    await h.db.db.transaction().execute(async (trx) => {
      await new KeyRepository(trx).roll(
        key.id,
        { hash: hashSecret(next), ciphertext: encryptSecret(next, h.encryptionKey) },
        new Date(graceEnd),
        new Date(h.now),
      );
      await new AuditRepository(trx).insert([
        {
          id: `aud_${key.id}`,
          time: new Date(h.now),
          actor: { type: 'root' },
          action: 'key.roll',
          target: { type: 'key', id: key.id },
          requestId: 'r',
          clientAddress: '::1',
          changes: { before: '{}', after: '{}' },
        },
      ]);
    });
    h.now = graceEnd;
    // Without the recorded changes this replica would still take the old secret as current.
    expect((await call(key.secret)).status).toBe(200);
    h.now = graceEnd - 1_500;
    await feed.poll();
    h.now = graceEnd - 1;
    expect((await call(key.secret)).status).toBe(200);
    h.now = graceEnd;
    expect((await call(key.secret)).status).toBe(401);
    expect((await call(next)).status).toBe(200);
  });

  it('writes the last use of each presented key, refusals included', async () => {
    const used = await h.createKey();
    const disabled = await h.createKey();
    await h.keys.update(disabled.id, { enabled: false }, new Date(h.now));
    await announce(disabled.id);
    h.now += 60_000;
    const at = h.now;
    expect((await call(used.secret)).status).toBe(200);
    expect((await call(disabled.secret)).status).toBe(403);
    // The app writes last uses once a second.
    const lastUse = () =>
      Promise.all([used, disabled].map(async (k) => (await h.keys.get(k.id))?.lastUsedAt?.getTime()));
    expect(
      (await waitFor(lastUse, (times) => times.every((t) => t !== undefined), { timeoutMs: 5_000 })).value,
    ).toEqual([at, at]);
  });
});
