/**
 * Portal sessions as stored, on both stores (docs/decisions/0100): a sign-in code is exchanged once
 * even when two replicas take it at the same instant, and never after its 10 minutes; a session is
 * found by its token's hash until it expires, is ended, or its consumer is deleted; ended rows are
 * pruned. Only hashes are stored.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ConsumerRepository } from '../../src/store/consumer-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { PortalSessionRepository } from '../../src/store/portal-session-repository.js';
import { STORAGES, type Storage } from '../helpers/management-storage.js';

const hash = (text: string) => createHash('sha256').update(text).digest();
const T0 = new Date('2026-11-24T10:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('portal sessions on %s storage', (kind) => {
  let storage: Storage;
  let sessions: PortalSessionRepository;
  let consumers: ConsumerRepository;

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    sessions = new PortalSessionRepository(storage.handle.db);
    consumers = new ConsumerRepository(storage.handle.db);
  }, 60_000);

  afterAll(() => storage?.dispose());

  async function consumer(): Promise<string> {
    const id = 'con_' + randomBytes(16).toString('base64url');
    await consumers.insert({
      id,
      name: 'c',
      externalId: null,
      metadata: '{}',
      rateLimitId: null,
      createdAt: T0,
    });
    return id;
  }

  async function link(consumerId: string): Promise<{ id: string; code: string }> {
    const id = 'pss_' + randomBytes(16).toString('base64url');
    const code = randomBytes(32).toString('base64url');
    await sessions.insert({
      id,
      consumerId,
      user: { id: 'u' },
      ttlSeconds: 3600,
      createdAt: T0,
      code: { hash: hash(code), expiresAt: at(600_000) },
    });
    return { id, code };
  }

  it('exchanges a code once, even twice at the same instant, and the session lasts its ttl from then', async () => {
    const { code } = await link(await consumer());
    const [one, two] = await Promise.all([
      sessions.signIn(hash(code), hash('token-1'), at(1_000)),
      sessions.signIn(hash(code), hash('token-2'), at(1_000)),
    ]);
    const won = [one, two].filter((s) => s !== undefined);
    expect(won).toHaveLength(1);
    expect(won[0]).toMatchObject({ signedIn: true, expiresAt: at(1_000 + 3_600_000) });
    expect(await sessions.signIn(hash(code), hash('token-3'), at(2_000))).toBeUndefined();
    const token = one ? 'token-1' : 'token-2';
    expect(await sessions.byToken(hash(token), at(3_600_000))).toMatchObject({ id: won[0]!.id });
    expect(await sessions.byToken(hash(token), at(1_000 + 3_600_000))).toBeUndefined();
  });

  it('refuses a code after its 10 minutes', async () => {
    const { code } = await link(await consumer());
    expect(await sessions.signIn(hash(code), hash('late'), at(600_000))).toBeUndefined();
  });

  it('a session ends with its consumer, or when ended; ended rows are pruned', async () => {
    const consumerId = await consumer();
    const { id, code } = await link(consumerId);
    await sessions.signIn(hash(code), hash('t-consumer'), at(1_000));
    await consumers.delete(consumerId, at(2_000));
    expect(await sessions.byToken(hash('t-consumer'), at(3_000))).toBeUndefined();
    expect(await sessions.end(id, at(3_000))).toBeUndefined();

    const other = await link(await consumer());
    await sessions.signIn(hash(other.code), hash('t-ended'), at(1_000));
    expect(await sessions.end(other.id, at(2_000))).toMatchObject({ id: other.id });
    expect(await sessions.byToken(hash('t-ended'), at(2_000))).toBeUndefined();

    const expiring = await link(await consumer());
    await sessions.pruneEnded(at(600_001));
    expect((await sessions.listActive(undefined, at(0))).map((s) => s.id)).not.toContain(expiring.id);
  });
});
