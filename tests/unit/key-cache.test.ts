import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { KeyCache, type KeyCacheOptions, type ResolvedKey } from '../../src/keys/key-cache.js';
import type { Plan } from '../../src/plans/plan.js';
import type { Scope } from '../../src/plans/subject.js';
import { LocalKeyEvents } from '../../src/keys/key-events.js';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../../src/keys/secret.js';
import { Metrics } from '../../src/ops/metrics.js';
import { ConsumerRepository } from '../../src/store/consumer-repository.js';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { PlanRepository } from '../../src/store/plan-repository.js';
import { plan } from '../helpers/plans.js';

/** A plan of two limits, one sliding. */
const SILVER = plan(
  { limit: 10, period: 'hour' },
  { limit: 2, period: 'second', name: 'burst', algorithm: 'sliding' },
);

/** A key of no consumer, as the cache resolves it: its own plan (or the default) its one subject. */
const keyAlone = (id: string, keyPlan: Plan | undefined): ResolvedKey => ({
  id,
  enabled: true,
  expiresAtMs: null,
  consumerId: undefined,
  subjects: keyPlan === undefined ? undefined : [{ scope: 'key', id, plan: keyPlan }],
  pricing: undefined,
  allowedRouteIds: null,
  restrictions: undefined,
  identity: { name: 'k', externalId: null, metadata: '{}' },
});

/** The plan a resolved key is charged to for `scope` (its own, or its consumer's), as the limiter gets it. */
const planOf = (key: ResolvedKey | undefined, scope: Scope) =>
  key?.subjects?.find((subject) => subject.scope === scope)?.plan;

describe('KeyCache over a real KeyRepository (embedded Postgres)', () => {
  let dir: string;
  let db: DbHandle;
  let keys: KeyRepository;
  let plans: PlanRepository;
  let consumers: ConsumerRepository;
  const metrics = new Metrics();
  let events: LocalKeyEvents;
  let now: number;
  let lookups: number;
  /** Look-ups that have read the database (and may be held at `gate`). */
  let reads: number;
  let failing: boolean;
  /** When set, a look-up reads the database and then waits for it: a read held in flight. */
  let gate: Promise<void> | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tg-key-cache-'));
    db = await openEmbedded(dir);
    await migrate(db);
    keys = new KeyRepository(db.db);
    plans = new PlanRepository(db.db);
    consumers = new ConsumerRepository(db.db);
    await plans.insert({
      rateLimitId: 'gold',
      description: '',
      limits: plan({ limit: 100, period: 'minute' }).limits,
      createdAt: new Date(),
    });
    await plans.insert({
      rateLimitId: 'silver',
      description: '',
      limits: SILVER.limits,
      createdAt: new Date(),
    });
  }, 120_000);

  afterAll(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    events = new LocalKeyEvents();
    now = 1_000_000;
    lookups = 0;
    reads = 0;
    failing = false;
    gate = undefined;
  });

  function cache(options: Partial<KeyCacheOptions> = {}): KeyCache {
    return new KeyCache({
      lookup: async (hash) => {
        lookups++;
        if (failing) throw new Error('database down');
        const row = await keys.findBySecretHash(hash);
        reads++;
        if (gate) await gate;
        return row;
      },
      events,
      metrics,
      defaultRateLimit: undefined,
      clock: () => now,
      ...options,
    });
  }

  async function newConsumer(rateLimitId: string | null): Promise<string> {
    const id = 'con_' + randomBytes(16).toString('base64url');
    await consumers.insert({
      id,
      name: 'c',
      externalId: null,
      metadata: '{}',
      rateLimitId,
      createdAt: new Date(),
    });
    return id;
  }

  async function newKey(
    plan?: string,
    consumerId: string | null = null,
    secret = generateSecret(),
  ): Promise<{ id: string; secret: string }> {
    const id = generateKeyId();
    await keys.insert({
      id,
      name: 'k',
      secretHash: hashSecret(secret),
      secretCiphertext: encryptSecret(secret, randomBytes(32)),
      createdAt: new Date(),
      consumerId,
    });
    if (plan) await keys.bindPlan(id, plan, new Date());
    return { id, secret };
  }

  it("holds the key's name, externalId and metadata as stored, for verify to answer from memory", async () => {
    const id = generateKeyId();
    const secret = generateSecret();
    const metadata = '{"tier":"gold","2":[1,{"b":null}]}';
    await keys.insert({
      id,
      name: 'acme production',
      secretHash: hashSecret(secret),
      secretCiphertext: encryptSecret(secret, randomBytes(32)),
      createdAt: new Date(),
      externalId: 'cus_42',
      metadata,
    });
    const c = cache();
    const identity = { name: 'acme production', externalId: 'cus_42', metadata };
    expect((await c.resolve(secret))?.identity).toEqual(identity);
    expect(c.fresh(secret)?.identity).toEqual(identity);
    expect(lookups).toBe(1);
  });

  it('resolves a key with its plan, then answers from memory without a query', async () => {
    const key = await newKey('gold');
    const c = cache();
    expect(await c.resolve(key.secret)).toEqual(keyAlone(key.id, plan({ limit: 100, period: 'minute' })));
    // A hit is synchronous: no promise, no query.
    expect(c.resolve(key.secret)).toEqual(keyAlone(key.id, plan({ limit: 100, period: 'minute' })));
    expect(lookups).toBe(1);
  });

  it('applies the default plan to keys without a plan, and none when there is no default', async () => {
    const key = await newKey();
    const defaultRateLimit = plan({ limit: 5, period: 'second' });
    expect(await cache({ defaultRateLimit }).resolve(key.secret)).toEqual(keyAlone(key.id, defaultRateLimit));
    expect(await cache().resolve(key.secret)).toEqual(keyAlone(key.id, undefined));
  });

  it('shares one look-up among concurrent misses for one secret', async () => {
    const key = await newKey();
    const c = cache();
    const results = await Promise.all(Array.from({ length: 50 }, () => c.resolve(key.secret)));
    expect(new Set(results.map((r) => r?.id))).toEqual(new Set([key.id]));
    expect(lookups).toBe(1);
  });

  it('never queries for a string that cannot be a secret', () => {
    const c = cache();
    for (const bad of ['', 'abc', 'tg_short', 'xx_' + 'a'.repeat(43), 'tg_' + 'a'.repeat(42) + '!'])
      expect(c.resolve(bad)).toBeUndefined();
    expect(lookups).toBe(0);
  });

  it('remembers unknown secrets for a short while, bounded in number', async () => {
    const c = cache({ negativeTtlMs: 1_000, maxNegativeEntries: 2 });
    const [a, b, d] = [generateSecret(), generateSecret(), generateSecret()];
    expect(await c.resolve(a)).toBeUndefined();
    expect(c.resolve(a)).toBeUndefined();
    expect(lookups).toBe(1);
    now += 1_001;
    expect(await c.resolve(a)).toBeUndefined();
    expect(lookups).toBe(2);
    // a, b, d: the oldest (a) is evicted past two entries.
    await c.resolve(b);
    await c.resolve(d);
    expect(lookups).toBe(4);
    await c.resolve(a);
    expect(lookups).toBe(5);
    expect(c.resolve(d)).toBeUndefined();
    expect(lookups).toBe(5);
  });

  it('re-reads an entry after its lifetime, as a backstop for a lost invalidation', async () => {
    const key = await newKey('gold');
    const c = cache({ ttlMs: 30_000 });
    await c.resolve(key.secret);
    await keys.bindPlan(key.id, 'silver', new Date());
    now += 29_999;
    expect(c.resolve(key.secret)).toMatchObject({
      subjects: [{ plan: plan({ limit: 100, period: 'minute' }) }],
    });
    now += 2;
    expect(await c.resolve(key.secret)).toMatchObject({ subjects: [{ plan: SILVER }] });
    expect(lookups).toBe(2);
  });

  it('drops a key the moment its change is announced', async () => {
    const key = await newKey();
    const c = cache();
    await c.resolve(key.secret);
    await keys.delete(key.id);
    await events.publish({ kind: 'key', keyId: key.id });
    expect(await c.resolve(key.secret)).toBeUndefined();
  });

  it('drops every entry when changes may have been missed (a subscriber reconnected)', async () => {
    const [a, b] = [await newKey('gold'), await newKey()];
    const c = cache();
    await c.resolve(a.secret);
    await c.resolve(b.secret);
    await keys.delete(a.id);
    await keys.bindPlan(b.id, 'silver', new Date());
    await events.publish({ kind: 'all' });
    expect(await c.resolve(a.secret)).toBeUndefined();
    expect(await c.resolve(b.secret)).toEqual(keyAlone(b.id, SILVER));
  });

  it('keeps serving cached keys after such a reconnect while the database is down too', async () => {
    const key = await newKey('gold');
    const c = cache();
    await c.resolve(key.secret);
    failing = true;
    await events.publish({ kind: 'all' });
    expect(await c.resolve(key.secret)).toEqual(keyAlone(key.id, plan({ limit: 100, period: 'minute' })));
    expect(lookups).toBe(2);
  });

  it('re-checks a key whose change was read back from the record, and keeps it working while the database is down', async () => {
    const [kept, gone] = [await newKey('gold'), await newKey('gold')];
    const c = cache();
    await c.resolve(kept.secret);
    await c.resolve(gone.secret);
    // Checked again at the next use: a change the message did not bring is seen.
    await keys.delete(gone.id);
    await events.publish({ kind: 'key', keyId: gone.id, recheck: true });
    expect(await c.resolve(gone.secret)).toBeUndefined();
    // Most such changes were heard already: with the database down, the entry keeps its key working.
    failing = true;
    await events.publish({ kind: 'plan', rateLimitId: 'gold', recheck: true });
    expect(await c.resolve(kept.secret)).toEqual(keyAlone(kept.id, plan({ limit: 100, period: 'minute' })));
    expect(lookups).toBe(4);
  });

  it('drops every key bound to a plan when the plan changes, and only those', async () => {
    const onGold = await newKey('gold');
    const onSilver = await newKey('silver');
    const c = cache();
    await c.resolve(onGold.secret);
    await c.resolve(onSilver.secret);
    lookups = 0;
    await events.publish({ kind: 'plan', rateLimitId: 'gold' });
    await c.resolve(onGold.secret);
    await c.resolve(onSilver.secret);
    expect(lookups).toBe(1);
  });

  it("resolves a key with its consumer and the consumer's plan in the one look-up, beside the key's own plan", async () => {
    const consumerId = await newConsumer('silver');
    const [own, none] = [await newKey('gold', consumerId), await newKey(undefined, consumerId)];
    const c = cache({ defaultRateLimit: plan({ limit: 1, period: 'second' }) });
    expect(await c.resolve(own.secret)).toEqual({
      id: own.id,
      enabled: true,
      expiresAtMs: null,
      consumerId,
      subjects: [
        { scope: 'key', id: own.id, plan: plan({ limit: 100, period: 'minute' }) },
        { scope: 'consumer', id: consumerId, plan: SILVER },
      ],
      pricing: undefined,
      allowedRouteIds: null,
      identity: { name: 'k', externalId: null, metadata: '{}' },
    });
    // The default applies to the key's own plan; the consumer's stays its own.
    expect(planOf(await c.resolve(none.secret), 'key')).toEqual(plan({ limit: 1, period: 'second' }));
    expect(lookups).toBe(2);
    const alone = await c.resolve((await newKey()).secret);
    expect(alone?.consumerId).toBeUndefined();
    expect(alone?.subjects).toEqual([
      { scope: 'key', id: alone?.id, plan: plan({ limit: 1, period: 'second' }) },
    ]);
    // A consumer without a plan limits nothing, but stays where the key's counts live.
    const withoutPlan = await c.resolve((await newKey(undefined, await newConsumer(null))).secret);
    expect(planOf(withoutPlan, 'consumer')?.limits).toEqual([]);
  });

  it('drops the keys of a consumer when the consumer changes, and only those: a new consumer plan is seen at once', async () => {
    const [a, b] = [await newConsumer(null), await newConsumer(null)];
    const [ofA, alsoOfA, ofB] = [
      await newKey('gold', a),
      await newKey(undefined, a),
      await newKey('gold', b),
    ];
    const c = cache();
    for (const key of [ofA, alsoOfA, ofB]) await c.resolve(key.secret);
    lookups = 0;
    await consumers.update(a, { rateLimitId: 'silver' }, new Date());
    await events.publish({ kind: 'consumer', consumerId: a });
    expect(planOf(await c.resolve(ofA.secret), 'consumer')).toEqual(SILVER);
    expect(planOf(await c.resolve(alsoOfA.secret), 'consumer')).toEqual(SILVER);
    expect(planOf(await c.resolve(ofB.secret), 'consumer')?.limits).toEqual([]);
    expect(lookups).toBe(2);
  });

  it("drops the keys whose consumer holds a plan when that plan changes, whatever the key's own plan", async () => {
    const holder = await newConsumer('silver');
    const [ofHolder, elsewhere] = [await newKey('gold', holder), await newKey('gold')];
    const c = cache();
    await c.resolve(ofHolder.secret);
    await c.resolve(elsewhere.secret);
    lookups = 0;
    await events.publish({ kind: 'plan', rateLimitId: 'silver' });
    await c.resolve(ofHolder.secret);
    await c.resolve(elsewhere.secret);
    expect(lookups).toBe(1);
  });

  it("re-checks a consumer's keys when the change was read back from the record, and keeps them working while the database is down", async () => {
    const consumerId = await newConsumer('silver');
    const key = await newKey(undefined, consumerId);
    const c = cache();
    await c.resolve(key.secret);
    failing = true;
    await events.publish({ kind: 'consumer', consumerId, recheck: true });
    expect(planOf(await c.resolve(key.secret), 'consumer')).toEqual(SILVER);
    expect(lookups).toBe(2);
  });

  /** A look-up of `secret` held once it has read the database, until `release`. */
  async function heldLookUp(c: KeyCache, secret: string) {
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const answer = c.resolve(secret);
    const readsBefore = reads;
    while (reads === readsBefore) await new Promise((r) => setImmediate(r));
    const release = () => {
      gate = undefined;
      open();
    };
    return { answer, release };
  }

  it('does not cache what a look-up read before a change announced during it', async () => {
    const key = await newKey();
    const c = cache();
    const held = await heldLookUp(c, key.secret);
    await keys.delete(key.id);
    await events.publish({ kind: 'key', keyId: key.id });
    held.release();
    // The racing caller gets what was read; nothing of it may be kept.
    expect(await held.answer).toMatchObject({ id: key.id });
    expect(c.knows(key.secret)).toBe(false);
    expect(await c.resolve(key.secret)).toBeUndefined();
  });

  it('keeps what a look-up read while another key changed, and nothing while its plan did', async () => {
    const [key, other] = [await newKey('gold'), await newKey()];
    const c = cache();
    const held = await heldLookUp(c, key.secret);
    await events.publish({ kind: 'key', keyId: other.id });
    await events.publish({ kind: 'plan', rateLimitId: 'silver' });
    held.release();
    expect(await held.answer).toMatchObject({ id: key.id });
    expect(c.fresh(key.secret)).toMatchObject({ id: key.id });
    // Dropped, then looked up again while its own plan changes: answered once, not kept.
    await events.publish({ kind: 'key', keyId: key.id });
    const again = await heldLookUp(c, key.secret);
    await events.publish({ kind: 'plan', rateLimitId: 'gold' });
    again.release();
    expect(await again.answer).toMatchObject({ id: key.id });
    expect(c.knows(key.secret)).toBe(false);
  });

  it('keeps what a look-up read while a change read back from the record arrived, to check at its next use', async () => {
    const key = await newKey();
    const c = cache();
    const held = await heldLookUp(c, key.secret);
    // A change of the key read back from the record (which a message has most likely brought already).
    await events.publish({ kind: 'key', keyId: key.id, recheck: true });
    held.release();
    expect(await held.answer).toMatchObject({ id: key.id });
    // Known (an address out of guesses may still use it), not fresh: its next use looks it up again.
    expect(c.knows(key.secret)).toBe(true);
    expect(c.fresh(key.secret)).toBeUndefined();
    expect(await c.resolve(key.secret)).toMatchObject({ id: key.id });
    expect(lookups).toBe(2);
    expect(c.fresh(key.secret)).toMatchObject({ id: key.id });
  });

  it('remembers nothing of a look-up that found no key while a change arrived: a secret rolled in meanwhile works', async () => {
    const secret = generateSecret();
    const c = cache();
    const held = await heldLookUp(c, secret);
    // As a roll gives a key a new secret, and announces it.
    const key = await newKey(undefined, null, secret);
    await events.publish({ kind: 'key', keyId: key.id });
    held.release();
    expect(await held.answer).toBeUndefined();
    expect(await c.resolve(secret)).toMatchObject({ id: key.id });
  });

  it('rejects when the database is down, but keeps an expired entry working meanwhile', async () => {
    const known = await newKey('gold');
    const c = cache({ ttlMs: 1_000 });
    await c.resolve(known.secret);
    failing = true;
    await expect(c.resolve(generateSecret())).rejects.toThrow('database down');
    now += 5_000;
    expect(await c.resolve(known.secret)).toMatchObject({ id: known.id });
    // Trusted for a grace period without asking again.
    const asked = lookups;
    expect(c.resolve(known.secret)).toMatchObject({ id: known.id });
    expect(lookups).toBe(asked);
    // A failure is not remembered as "unknown": the key resolves once the database is back.
    failing = false;
    const other = await newKey();
    expect(await c.resolve(other.secret)).toMatchObject({ id: other.id });
  });

  it('counts hits, misses and negative answers', async () => {
    const registry = new Metrics();
    const c = cache({ metrics: registry });
    const key = await newKey();
    await c.resolve(key.secret);
    c.resolve(key.secret);
    c.resolve('nope');
    const text = await registry.registry.metrics();
    expect(text).toContain('tollgate_key_cache_requests_total{result="miss"} 1');
    expect(text).toContain('tollgate_key_cache_requests_total{result="hit"} 1');
    expect(text).toContain('tollgate_key_cache_requests_total{result="negative"} 1');
  });

  it('bounds the positive entries, evicting the oldest', async () => {
    const c = cache({ maxEntries: 2 });
    const [a, b, d] = [await newKey(), await newKey(), await newKey()];
    await c.resolve(a.secret);
    await c.resolve(b.secret);
    await c.resolve(d.secret);
    lookups = 0;
    c.resolve(d.secret);
    c.resolve(b.secret);
    expect(lookups).toBe(0);
    await c.resolve(a.secret);
    expect(lookups).toBe(1);
  });
});
