/**
 * Consumer changes across three replicas on Redis and Postgres (docs/guides/consumers.md): binding a plan to
 * a consumer, and deleting it with force, made on one replica reach every replica's key cache within
 * 1 s, for every key of the consumer. A replica's cache shows it in its metrics: the key's next request
 * after the change is a look-up (a miss), where before it was answered from memory.
 */
import {
  fetchWithin,
  hit,
  msUntilSeenEverywhere,
  startFleet,
  waitFor,
  type Fleet,
} from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

let fleet: Fleet;
let a: Tollgate;

beforeAll(async () => {
  fleet = await startFleet(3);
  a = fleet.members[0]!;
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

/** The key-cache look-ups a replica has made in the database so far. */
async function misses(t: Tollgate): Promise<number> {
  const text = await fetchWithin(`${t.opsUrl}/metrics`, {}, (res) => res.text());
  return Number(/^tollgate_key_cache_requests_total\{result="miss"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

/**
 * Each key answers 200 from memory on every replica: looked up once, then held. A change recorded just
 * before (the keys' creation, the last change) may still reach a replica as a recheck, read by its
 * change feed a poll later (later under load), which makes the key's next request a look-up: held
 * means a whole round of every key without one.
 */
async function heldEverywhere(secrets: readonly string[]): Promise<void> {
  for (const t of fleet.members) {
    const lookUpsInARound = async () => {
      for (const secret of secrets) expect(await hit(t, secret)).toBe(200);
      const before = await misses(t);
      for (const secret of secrets) expect(await hit(t, secret)).toBe(200);
      return (await misses(t)) - before;
    };
    const { value } = await waitFor(lookUpsInARound, (n) => n === 0, { timeoutMs: 5_000, everyMs: 100 });
    expect(value).toBe(0);
  }
}

/**
 * Makes `change` on replica a, then on every replica sends the first key until its request is a look-up
 * again (the change reached that replica's cache), and each other key once, which must be a look-up
 * too; resolves how long after the change's answer the slowest replica was sent that first look-up
 * (msUntilSeenEverywhere), and every request's status.
 */
async function reachesEveryCache(
  secrets: readonly string[],
  change: () => Promise<unknown>,
): Promise<{ ms: number; statuses: number[] }> {
  const [first, ...rest] = secrets as [string, ...string[]];
  const before = await Promise.all(fleet.members.map(misses));
  await change();
  const started = performance.now();
  const statuses: number[] = [];
  const times = await Promise.all(
    fleet.members.map(async (t, i) => {
      const ms = await msUntilSeenEverywhere(started, [
        async () => {
          statuses.push(await hit(t, first));
          return (await misses(t)) > before[i]!;
        },
      ]);
      // Every other key of the consumer was dropped with it: each is looked up again.
      for (const secret of rest) {
        const looked = await misses(t);
        statuses.push(await hit(t, secret));
        expect(await misses(t)).toBe(looked + 1);
      }
      return ms;
    }),
  );
  return { ms: Math.max(...times), statuses };
}

it("a plan bound to a consumer, and the consumer's forced delete, reach every replica's cache for all its keys within 1 s", async () => {
  const consumer = (await a.admin('POST', '/tollgate/consumers', { name: 'acme', externalId: 'acct-42' }))
    .body as { consumerId: string };
  const keys = [];
  for (const name of ['production', 'staging']) {
    const created = await a.admin('POST', '/consumer-api-key/create', {
      name,
      consumerId: consumer.consumerId,
    });
    expect(created.status).toBe(201);
    keys.push(created.body as { id: string; secret: string });
  }
  const secrets = keys.map((k) => k.secret);
  expect(
    (
      await a.admin('POST', '/rate-limit/create', {
        rateLimitId: 'acme-monthly',
        limit: 100_000,
        period: 'month',
      })
    ).status,
  ).toBe(201);
  await heldEverywhere(secrets);

  const bound = await reachesEveryCache(secrets, async () => {
    expect(
      (await a.admin('PATCH', `/tollgate/consumers/${consumer.consumerId}`, { rateLimitId: 'acme-monthly' }))
        .status,
    ).toBe(200);
  });
  expect(bound.ms).toBeLessThan(1_000);
  expect(new Set(bound.statuses)).toEqual(new Set([200]));
  // Every replica shows the consumer with its plan and each key with its consumer.
  for (const t of fleet.members) {
    const detail = await t.admin('GET', `/tollgate/consumers/${consumer.consumerId}`);
    expect(detail.body).toMatchObject({
      rateLimitId: 'acme-monthly',
      keyCount: 2,
      usage: { rateLimits: { limit: 100_000 } },
    });
    for (const key of keys)
      expect((await t.admin('GET', `/consumer-api-key/${key.id}`)).body.consumerId).toBe(consumer.consumerId);
  }

  await heldEverywhere(secrets);
  const deleted = await reachesEveryCache(secrets, async () => {
    expect((await a.admin('DELETE', `/tollgate/consumers/${consumer.consumerId}?force=true`)).status).toBe(
      200,
    );
  });
  expect(deleted.ms).toBeLessThan(1_000);
  // The detached keys keep working, alone, on every replica.
  expect(new Set(deleted.statuses)).toEqual(new Set([200]));
  for (const t of fleet.members) {
    expect((await t.admin('GET', `/tollgate/consumers/${consumer.consumerId}`)).status).toBe(404);
    for (const key of keys)
      expect((await t.admin('GET', `/consumer-api-key/${key.id}`)).body.consumerId).toBeNull();
  }
}, 60_000);
