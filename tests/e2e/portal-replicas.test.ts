/**
 * Portal sessions and plan switches across three replicas on Redis and Postgres (contract section 22):
 * a session signed in on one replica works on every other; signing out, an administrator's DELETE, or
 * deleting the consumer on one replica is refused by every other within 1 s; a plan switched through
 * the portal is in force on every replica within 1 s, keeping what the current window spent.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { hit, msUntilSeenEverywhere, startFleet, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';
import { PortalUser } from '../helpers/portal-user.js';

let fleet: Fleet;
let a: Tollgate;
let b: Tollgate;
let c: Tollgate;

beforeAll(async () => {
  fleet = await startFleet(3);
  [a, b, c] = fleet.members as [Tollgate, Tollgate, Tollgate];
  for (const [rateLimitId, limit] of [
    ['small', 3],
    ['large', 1000],
  ] as const)
    await a.admin('POST', '/rate-limit/create', { rateLimitId, limit, period: 'hour' });
  expect(
    (await a.admin('PATCH', '/tollgate/portal/settings', { enabled: true, publicPlans: ['small', 'large'] }))
      .status,
  ).toBe(200);
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

async function consumer(rateLimitId?: string): Promise<string> {
  return (await a.admin('POST', '/tollgate/consumers', { name: 'Acme', ...(rateLimitId && { rateLimitId }) }))
    .body.consumerId;
}

/** A user signed in through replica `on`, and the same cookie as seen by each replica. */
async function signedIn(consumerId: string, on: Tollgate): Promise<{ id: string; users: PortalUser[] }> {
  const { body } = await on.admin('POST', '/tollgate/portal/sessions', { consumerId, user: { id: 'u' } });
  const first = new PortalUser(on.url);
  expect((await first.signIn(body.url)).status).toBe(303);
  const users = [a, b, c].map((t) => {
    const user = new PortalUser(t.url);
    user.cookie = first.cookie;
    user.csrf = first.csrf;
    return user;
  });
  for (const user of users) expect((await user.call('GET', '/keys')).status).toBe(200);
  return { id: body.sessionId as string, users };
}

/** Ms from the answer to `end()` (the change made) until every replica refuses the session (msUntilSeenEverywhere). */
async function refusedEverywhereWithin(users: PortalUser[], end: () => Promise<unknown>): Promise<number> {
  await end();
  return msUntilSeenEverywhere(
    performance.now(),
    users.map((user) => async () => (await user.call('GET', '/keys')).status === 401),
  );
}

it('a session signed in on one replica is ended on every replica within 1 s: sign-out, DELETE, consumer deleted', async () => {
  const consumerId = await consumer();
  const out = await signedIn(consumerId, a);
  expect(
    await refusedEverywhereWithin(out.users, () => out.users[1]!.call('POST', '/sign-out')),
  ).toBeLessThan(1_000);

  const deleted = await signedIn(consumerId, b);
  expect(
    await refusedEverywhereWithin(deleted.users, () =>
      c.admin('DELETE', `/tollgate/portal/sessions/${deleted.id}`),
    ),
  ).toBeLessThan(1_000);

  const gone = await signedIn(consumerId, c);
  expect(
    await refusedEverywhereWithin(gone.users, () => a.admin('DELETE', `/tollgate/consumers/${consumerId}`)),
  ).toBeLessThan(1_000);
});

it('a plan switched through the portal is in force on every replica within 1 s, keeping what the window spent', async () => {
  const consumerId = await consumer('small');
  const key = await a.admin('POST', '/consumer-api-key/create', { name: 'k', consumerId });
  const secret = key.body.secret as string;
  const { users } = await signedIn(consumerId, a);
  // The small plan's 3 requests an hour, spent across the replicas.
  expect([await hit(a, secret), await hit(b, secret), await hit(c, secret)]).toEqual([200, 200, 200]);
  for (const t of [a, b, c]) expect(await hit(t, secret)).toBe(429);

  const switched = await users[2]!.call('POST', '/plan', { rateLimitId: 'large' });
  // From the switch's answer, as above.
  const started = performance.now();
  expect(switched.body.current).toMatchObject({
    rateLimitId: 'large',
    state: { limit: 1000, remaining: 997 },
  });
  expect(
    await msUntilSeenEverywhere(
      started,
      [a, b, c].map((t) => async () => (await hit(t, secret)) === 200),
    ),
  ).toBeLessThan(1_000);
});
