/**
 * Key and plan changes across three replicas on Redis and Postgres (docs/guides/keys.md, docs/guides/plans.md): each
 * change made on one replica is observed on the other two within 1 s of its answer; a rolled secret works on every
 * replica until the end of its grace and on none after; an expiry takes effect at its instant
 * everywhere with no message; lastUsedAt shows within 2 s on any replica.
 */
import { hit, hitFull, keyWithPlan, sleep, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';
import { flushedEverywhere } from './helpers/usage-flushed.js';
import { msUntilSeenEverywhere } from '../helpers/poll.js';
import { testKeyPrefix } from '../helpers/services.js';

let fleet: Fleet;
let a: Tollgate;
let others: Tollgate[];

beforeAll(async () => {
  fleet = await startFleet(3);
  a = fleet.members[0]!;
  others = fleet.members.slice(1);
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

type Answer = Awaited<ReturnType<typeof hitFull>>;

/**
 * Applies `change` (made on replica a unless it says otherwise) and measures how long after its answer
 * the replicas `asked` (the other two) are sent the first request they answer as `changed` says: a
 * loaded machine's slower management call, or slower answers, are not propagation.
 */
async function propagation(
  secret: string,
  change: () => Promise<unknown>,
  changed: (answer: Answer) => boolean,
  asked: readonly Tollgate[] = others,
): Promise<number> {
  await change();
  return msUntilSeenEverywhere(
    performance.now(),
    asked.map((t) => async () => changed(await hitFull(t, secret))),
  );
}

const answersWith = (status: number) => (answer: Answer) => answer.status === status;
const policyOf = (answer: Answer) => answer.headers.get('ratelimit-policy');

it('disable, enable, plan change, unbind, a forced plan delete, an expiry set in the past and delete reach the other replicas within 1 s', async () => {
  const key = await keyWithPlan(a, 'fleet', 1000);
  // Every replica holds the key in its cache before each change.
  for (const t of [a, ...others]) expect(await hit(t, key.secret)).toBe(200);

  expect(
    await propagation(
      key.secret,
      () => a.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: false }),
      answersWith(403),
    ),
  ).toBeLessThan(1_000);
  expect(await hit(a, key.secret)).toBe(403);
  expect(
    await propagation(
      key.secret,
      () => a.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: true }),
      answersWith(200),
    ),
  ).toBeLessThan(1_000);

  // A plan change: every replica's RateLimit-Policy names the new limit within 1 s.
  const detail = await a.admin('GET', `/consumer-api-key/${key.id}`);
  const planId = detail.body.rateLimitId as string;
  expect(
    await propagation(
      key.secret,
      async () => expect((await a.admin('PATCH', `/rate-limit/${planId}`, { limit: 500 })).status).toBe(200),
      (answer) => policyOf(answer)?.includes(';q=500;') === true,
    ),
  ).toBeLessThan(1_000);
  for (const t of others) expect(policyOf(await hitFull(t, key.secret))).toBe('"day";q=500;w=86400');

  // Unbound (no DEFAULT_RATE_LIMIT): no limit applies, so no RateLimit headers, on every replica.
  const unlimited = (answer: Answer) => answer.status === 200 && policyOf(answer) === null;
  expect(
    await propagation(
      key.secret,
      async () =>
        expect(
          (await a.admin('POST', '/api-keys/remove-rate-limit', { consumerApiKeyId: key.id })).status,
        ).toBe(200),
      unlimited,
    ),
  ).toBeLessThan(1_000);

  // Bound again, then its plan deleted with force: unbound everywhere within 1 s.
  expect(
    (await a.admin('POST', '/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: planId }))
      .status,
  ).toBe(200);
  for (const t of others)
    expect(
      (
        await waitFor(
          () => hitFull(t, key.secret),
          (r) => r.headers.has('ratelimit-policy'),
          { timeoutMs: 5_000, everyMs: 20 },
        )
      ).value.headers.has('ratelimit-policy'),
    ).toBe(true);
  expect(
    await propagation(
      key.secret,
      async () => expect((await a.admin('DELETE', `/rate-limit/${planId}?force=true`)).status).toBe(200),
      unlimited,
    ),
  ).toBeLessThan(1_000);

  // An expiry moved into the past: key_expired everywhere within 1 s.
  expect(
    await propagation(
      key.secret,
      () => a.admin('PATCH', `/consumer-api-key/${key.id}`, { expiresAt: '2020-01-01T00:00:00Z' }),
      answersWith(401),
    ),
  ).toBeLessThan(1_000);
  expect((await hitFull(others[0]!, key.secret)).body.code).toBe('key_expired');
  // Unexpired again everywhere before it is deleted.
  await propagation(
    key.secret,
    async () =>
      expect((await a.admin('PATCH', `/consumer-api-key/${key.id}`, { expiresAt: null })).status).toBe(200),
    answersWith(200),
  );

  expect(
    await propagation(key.secret, () => a.admin('DELETE', `/consumer-api-key/${key.id}`), answersWith(401)),
  ).toBeLessThan(1_000);
}, 60_000);

/**
 * `totalRequests` of a key once it equals `expected`, read again once every replica has handed over
 * what it recorded until then, so a request counted twice shows too.
 */
async function usageSettlesAt(keyId: string, expected: number): Promise<number> {
  const total = async () =>
    (await others[0]!.admin('GET', `/consumer-api-key/${keyId}`)).body.usage.totalRequests as number;
  await waitFor(total, (n) => n === expected, { timeoutMs: 10_000, what: `${expected} requests counted` });
  await flushedEverywhere([a, ...others], others[0]!);
  return total();
}

it('keeps a rolled secret working on every replica until its grace ends, and on none after', async () => {
  const key = await keyWithPlan(a, 'rolled', 1000);
  let presented = 0;
  /** A request with a valid key, counted: the key's usage must show exactly these. */
  const counted = async (t: Tollgate, secret: string) => {
    presented++;
    return hit(t, secret);
  };
  for (const t of [a, ...others]) expect(await counted(t, key.secret)).toBe(200);
  const rolled = await a.admin('POST', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 3 });
  expect(rolled.status).toBe(200);
  const graceEnd = Date.parse(rolled.body.previousSecretExpiresAt as string);
  // The new secret works at once everywhere; the old one until the grace ends.
  for (const t of [a, ...others]) expect(await counted(t, rolled.body.secret)).toBe(200);
  while (Date.now() < graceEnd - 300) {
    for (const t of [a, ...others]) {
      const status = await hit(t, key.secret);
      // Answered before the grace ended (the answer gives it to the second, rounded down), it was
      // decided before: it passed. One answered after may have been decided after, on a machine short
      // of CPU: either answer is right, and only a pass is in the key's usage.
      if (Date.now() < graceEnd) expect(status).toBe(200);
      if (status === 200) presented++;
    }
    await sleep(100);
  }
  await sleep(Math.max(0, graceEnd - Date.now()) + 50);
  for (const t of [a, ...others]) {
    expect(await hit(t, key.secret)).toBe(401); // opens no key: in nobody's usage
    expect(await counted(t, rolled.body.secret)).toBe(200);
  }
  // Both secrets were one key: every request either carried is in its usage, exactly once.
  expect(await usageSettlesAt(key.id, presented)).toBe(presented);
}, 60_000);

it('counts both secrets of a rolled key as one key: a plan of 12 admits exactly 12 over both, on every replica', async () => {
  const key = await keyWithPlan(a, 'one-count', 12);
  for (const t of [a, ...others]) expect(await hit(t, key.secret)).toBe(200);
  const rolled = await a.admin('POST', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 60 });
  expect(rolled.status).toBe(200);
  // 14 more, alternating old and new secret over the three replicas: 9 fit, 5 are refused.
  const statuses: number[] = [];
  for (let i = 0; i < 14; i++)
    statuses.push(await hit([a, ...others][i % 3]!, i % 2 === 0 ? key.secret : rolled.body.secret));
  expect(statuses.filter((s) => s === 200)).toHaveLength(9);
  expect(statuses.filter((s) => s === 429)).toHaveLength(5);
  expect(await usageSettlesAt(key.id, 17)).toBe(17);
  const detail = await others[1]!.admin('GET', `/consumer-api-key/${key.id}`);
  expect(detail.body.usage).toMatchObject({
    totalRequests: 17,
    successfulRequests: 12,
    failedRequests: 5,
    rateLimits: { limit: 12, remaining: 0 },
  });
}, 60_000);

/** Every replica answers `secret` with 200 until shortly before `endMs`, and with 401 from `endMs` on. */
async function secretEndsAt(replicas: readonly Tollgate[], secret: string, endMs: number): Promise<void> {
  let checks = 0;
  while (Date.now() < endMs - 150) {
    for (const t of replicas) {
      const status = await hit(t, secret);
      // Answered before the end, it was decided before it; answered later (a loaded machine), either way.
      if (Date.now() < endMs) expect(status).toBe(200);
    }
    checks++;
    await sleep(50);
  }
  expect(checks).toBeGreaterThan(0);
  await sleep(Math.max(0, endMs - Date.now()) + 30);
  for (const t of replicas) expect(await hit(t, secret)).toBe(401);
}

it('refuses a secret rolled with grace 0 at once, and on every replica before the instant the answer states', async () => {
  const key = await keyWithPlan(a, 'rolled-now', 1000);
  for (const t of [a, ...others]) expect(await hit(t, key.secret)).toBe(200);
  const before = Date.now();
  const rolled = await a.admin('POST', `/consumer-api-key/${key.id}/roll`);
  expect(rolled.status).toBe(200);
  const end = Date.parse(rolled.body.previousSecretExpiresAt as string);
  // A whole second, at least half a second away and at most 1.5 s: never before the real end anywhere.
  expect(end % 1000).toBe(0);
  expect(end - before).toBeGreaterThanOrEqual(500);
  expect(end - Date.now()).toBeLessThanOrEqual(1_500);
  expect(await hit(a, key.secret)).toBe(401);
  for (const t of others) {
    const { value } = await waitFor(
      () => hit(t, key.secret),
      (s) => s === 401,
      { timeoutMs: 5_000, everyMs: 10 },
    );
    expect(value).toBe(401);
  }
  expect(Date.now()).toBeLessThan(end);
  for (const t of [a, ...others]) expect(await hit(t, rolled.body.secret)).toBe(200);
  await sleep(Math.max(0, end - Date.now()) + 30);
  for (const t of [a, ...others]) expect(await hit(t, key.secret)).toBe(401);
}, 60_000);

it('ends a rolled secret at the stated instant on replicas that never got the change message, and brings them other changes within 1 s', async () => {
  // A replica publishing under another Redis prefix: its change messages reach nobody, as when it
  // cannot reach Redis at the moment of the change. The others learn from the recorded changes.
  const [deaf] = await fleet.replicas.start(1, { REDIS_KEY_PREFIX: testKeyPrefix() });
  const key = await keyWithPlan(a, 'rolled-unheard');
  for (const t of [a, ...others, deaf!]) expect(await hit(t, key.secret)).toBe(200);
  const rolled = await deaf!.admin('POST', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 2 });
  expect(rolled.status).toBe(200);
  await secretEndsAt(
    [a, ...others, deaf!],
    key.secret,
    Date.parse(rolled.body.previousSecretExpiresAt as string),
  );
  for (const t of [a, ...others]) expect(await hit(t, rolled.body.secret)).toBe(200);

  expect(
    await propagation(
      rolled.body.secret,
      async () =>
        expect((await deaf!.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: false })).status).toBe(
          200,
        ),
      answersWith(403),
      [a, ...others],
    ),
  ).toBeLessThan(1_000);
}, 60_000);

it('refuses a key at its expiry on every replica, with no message, and shows its last use within 2 s', async () => {
  const expiresAtMs = (Math.floor(Date.now() / 1000) + 3) * 1000;
  const created = await a.admin('POST', '/consumer-api-key/create', {
    name: 'trial',
    expiresAt: new Date(expiresAtMs).toISOString().slice(0, 19) + 'Z',
  });
  expect(created.status).toBe(201);
  const secret = created.body.secret as string;
  for (const t of [a, ...others]) expect(await hit(t, secret)).toBe(200);
  const usedAt = Date.now();
  const { value: lastUsed, ms } = await waitFor(
    async () =>
      (await others[1]!.admin('GET', `/consumer-api-key/${created.body.id}`)).body.lastUsedAt as
        string | null,
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
