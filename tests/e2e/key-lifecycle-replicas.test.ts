/**
 * Key and plan changes across three replicas on Redis and Postgres (contract sections 6 and 7): each
 * change made on one replica is observed on the other two within 1 s; a rolled secret works on every
 * replica until the end of its grace and on none after; an expiry takes effect at its instant
 * everywhere with no message; lastUsedAt shows within 2 s on any replica.
 */
import { hit, hitFull, keyWithPlan, sleep, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

let fleet: Fleet;
let a: Tollgate;
let others: Tollgate[];

beforeAll(async () => {
  fleet = await startFleet(3);
  a = fleet.members[0]!;
  others = fleet.members.slice(1);
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

/** How long until every other replica answers `secret` with `status` (ms; > 1000 fails the contract). */
async function seenByOthers(secret: string, status: number): Promise<number> {
  const times = await Promise.all(
    others.map(async (t) => (await waitFor(() => hit(t, secret), (s) => s === status, { timeoutMs: 5_000, everyMs: 20 })).value === status ? 0 : Infinity),
  );
  return Math.max(...times);
}

/** Applies `change` on replica a and measures how long the other two take to answer `status`. */
async function propagation(secret: string, change: () => Promise<unknown>, status: number): Promise<number> {
  const started = performance.now();
  await change();
  expect(await seenByOthers(secret, status)).toBe(0);
  return performance.now() - started;
}

it('disable, enable, unbind, plan change and delete reach the other replicas within 1 s', async () => {
  const key = await keyWithPlan(a, 'fleet', 1000);
  // Every replica holds the key in its cache before each change.
  for (const t of [a, ...others]) expect(await hit(t, key.secret)).toBe(200);

  expect(await propagation(key.secret, () => a.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: false }), 403)).toBeLessThan(1_000);
  expect(await hit(a, key.secret)).toBe(403);
  expect(await propagation(key.secret, () => a.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: true }), 200)).toBeLessThan(1_000);

  // A plan change: every replica's RateLimit-Policy names the new limit within 1 s.
  const detail = await a.admin('GET', `/consumer-api-key/${key.id}`);
  const planId = detail.body.rateLimitId as string;
  const started = performance.now();
  expect((await a.admin('PATCH', `/rate-limit/${planId}`, { limit: 500 })).status).toBe(200);
  for (const t of others) {
    const { value } = await waitFor(() => hitFull(t, key.secret), (r) => r.headers.get('ratelimit-policy')?.includes(';q=500;') === true, { timeoutMs: 5_000, everyMs: 20 });
    expect(value.headers.get('ratelimit-policy')).toBe('"default";q=500;w=86400');
  }
  expect(performance.now() - started).toBeLessThan(1_000);

  // Unbound (no DEFAULT_RATE_LIMIT): no limit applies, so no RateLimit headers, on every replica.
  const unbound = performance.now();
  expect((await a.admin('POST', '/api-keys/remove-rate-limit', { consumerApiKeyId: key.id })).status).toBe(200);
  for (const t of others) {
    const { value } = await waitFor(() => hitFull(t, key.secret), (r) => !r.headers.has('ratelimit-policy'), { timeoutMs: 5_000, everyMs: 20 });
    expect(value.headers.has('ratelimit-policy')).toBe(false);
  }
  expect(performance.now() - unbound).toBeLessThan(1_000);

  expect(await propagation(key.secret, () => a.admin('DELETE', `/consumer-api-key/${key.id}`), 401)).toBeLessThan(1_000);
}, 60_000);

it('keeps a rolled secret working on every replica until its grace ends, and on none after', async () => {
  const key = await keyWithPlan(a, 'rolled', 1000);
  for (const t of [a, ...others]) expect(await hit(t, key.secret)).toBe(200);
  const rolled = await a.admin('POST', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 3 });
  expect(rolled.status).toBe(200);
  const graceEnd = Date.parse(rolled.body.previousSecretExpiresAt as string);
  // The new secret works at once everywhere; the old one until the grace ends.
  for (const t of [a, ...others]) expect(await hit(t, rolled.body.secret)).toBe(200);
  while (Date.now() < graceEnd - 300) {
    for (const t of [a, ...others]) expect(await hit(t, key.secret)).toBe(200);
    await sleep(100);
  }
  await sleep(Math.max(0, graceEnd - Date.now()) + 50);
  for (const t of [a, ...others]) {
    expect(await hit(t, key.secret)).toBe(401);
    expect(await hit(t, rolled.body.secret)).toBe(200);
  }
  // Both secrets were one key: every answered request is in its usage, whichever secret it carried.
  const { value: total } = await waitFor(
    async () => (await others[0]!.admin('GET', `/consumer-api-key/${key.id}`)).body.usage.totalRequests as number,
    (n) => n >= 9,
  );
  expect(total).toBeGreaterThanOrEqual(9);
}, 60_000);

it('refuses a key at its expiry on every replica, with no message, and shows its last use within 2 s', async () => {
  const expiresAtMs = (Math.floor(Date.now() / 1000) + 3) * 1000;
  const created = await a.admin('POST', '/consumer-api-key/create', { name: 'trial', expiresAt: new Date(expiresAtMs).toISOString().slice(0, 19) + 'Z' });
  expect(created.status).toBe(201);
  const secret = created.body.secret as string;
  for (const t of [a, ...others]) expect(await hit(t, secret)).toBe(200);
  const usedAt = Date.now();
  const { value: lastUsed, ms } = await waitFor(
    async () => (await others[1]!.admin('GET', `/consumer-api-key/${created.body.id}`)).body.lastUsedAt as string | null,
    (v) => v !== null,
  );
  expect(ms).toBeLessThan(2_000);
  expect(Math.abs(Date.parse(lastUsed!) - usedAt)).toBeLessThan(2_000);

  await sleep(Math.max(0, expiresAtMs - Date.now()) + 20);
  for (const t of [a, ...others]) {
    const res = await hitFull(t, secret);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: 'key_expired' });
  }
}, 60_000);
