/**
 * Admin tokens and failed-credential throttles across two replicas on Redis and Postgres (contract
 * section 9): a token deleted or expired is refused by the other replica within 1 s, and wrong
 * credentials from one address share one budget across replicas instead of one each.
 */
import { sleep, startFleet, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

let fleet: Fleet;
let a: Tollgate;
let b: Tollgate;

beforeAll(async () => {
  // Each throttle test names its own client address (X-Forwarded-For through one trusted hop), so
  // it starts with a whole budget whatever the other tests spent.
  fleet = await startFleet(2, { TRUST_PROXY: '1' });
  [a, b] = fleet.members as [Tollgate, Tollgate];
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

const withToken = (t: Tollgate, token: string, path: string, client = '192.0.2.1') =>
  fetch(t.url + path, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': client } });

it('refuses a token deleted on one replica on the other at once, and an expired one at its instant', async () => {
  const created = await a.admin('POST', '/tollgate/admin-tokens', { name: 'support', scopes: ['keys:read'] });
  expect(created.status).toBe(201);
  const token = created.body.secret as string;
  expect((await withToken(b, token, '/consumer-api-key')).status).toBe(200);
  expect((await withToken(b, token, '/rate-limit')).status).toBe(403);
  expect((await a.admin('DELETE', `/tollgate/admin-tokens/${created.body.id}`)).status).toBe(200);
  expect((await withToken(b, token, '/consumer-api-key')).status).toBe(401);

  const expiresAtMs = (Math.floor(Date.now() / 1000) + 2) * 1000;
  const expiring = await a.admin('POST', '/tollgate/admin-tokens', { name: 'temp', scopes: ['keys:read'], expiresAt: new Date(expiresAtMs).toISOString().slice(0, 19) + 'Z' });
  expect((await withToken(b, expiring.body.secret, '/consumer-api-key')).status).toBe(200);
  await sleep(expiresAtMs - Date.now() + 20);
  expect((await withToken(a, expiring.body.secret, '/consumer-api-key')).status).toBe(401);
  expect((await withToken(b, expiring.body.secret, '/consumer-api-key')).status).toBe(401);
}, 30_000);

/** Wrong credentials sent alternately to both replicas until both refuse: how many got a 401. */
async function guessesAllowed(send: (t: Tollgate, i: number) => Promise<number>): Promise<number> {
  let allowed = 0;
  const refusing = new Set<Tollgate>();
  for (let i = 0; refusing.size < 2 && i < 1_000; i++) {
    const t = i % 2 === 0 ? a : b;
    const status = await send(t, i);
    if (status === 401) allowed++;
    else if (status === 429) refusing.add(t);
    else throw new Error(`unexpected ${status}`);
    // Give the shared count's answer time to arrive, as it does between real guesses.
    if (i % 10 === 9) await sleep(20);
  }
  return allowed;
}

it('shares one budget of wrong management credentials across replicas: 20 a minute, not 20 each', async () => {
  // Start early in a minute so every guess falls in one window.
  if (new Date().getUTCSeconds() > 50) await sleep((61 - new Date().getUTCSeconds()) * 1000);
  const allowed = await guessesAllowed(async (t, i) => (await withToken(t, `wrong-token-${i}`, '/consumer-api-key', '198.51.100.20')).status);
  expect(allowed).toBeGreaterThanOrEqual(20);
  expect(allowed).toBeLessThanOrEqual(22);
  // The right token from that address is throttled too, on both.
  for (const t of [a, b]) expect((await withToken(t, t.rootToken, '/consumer-api-key', '198.51.100.20')).status).toBe(429);
  // Another address is not affected.
  expect((await withToken(a, a.rootToken, '/consumer-api-key', '198.51.100.21')).status).toBe(200);
}, 90_000);

it('shares one budget of wrong API keys across replicas: 100 a minute, not 100 each', async () => {
  if (new Date().getUTCSeconds() > 50) await sleep((61 - new Date().getUTCSeconds()) * 1000);
  const wrongKey = (i: number) => 'tg_' + String(i).padStart(43, 'x');
  const allowed = await guessesAllowed(async (t, i) => (await withToken(t, wrongKey(i), '/v1/items', '198.51.100.30')).status);
  expect(allowed).toBeGreaterThanOrEqual(100);
  expect(allowed).toBeLessThanOrEqual(104);
}, 90_000);
