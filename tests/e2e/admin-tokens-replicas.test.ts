/**
 * Admin tokens and failed-credential throttles across two replicas on Redis and Postgres (docs/guides/admin-tokens-and-audit.md): a token deleted is refused by the other replica within 1 s, an expired one at its instant, and wrong
 * credentials from one address share one budget across replicas instead of one each.
 */
import { randomBytes } from 'node:crypto';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { msUntilSeenEverywhere } from '../helpers/poll.js';
import { startFleet, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

let fleet: Fleet;
let a: Tollgate;
let b: Tollgate;
const clock = new TestClock();

beforeAll(async () => {
  // Each throttle test names its own client address (X-Forwarded-For through one trusted hop), so
  // it starts with a whole budget whatever the other tests spent. The shared budgets are counted, not
  // Redis timed: a replica starved of CPU by the whole test run may read Redis's answers to a burst
  // late, and past the command timeout it counts on its own (REDIS_FAILURE_MODE).
  fleet = await startFleet(2, { TRUST_PROXY: '1', REDIS_COMMAND_TIMEOUT_MS: '5000', ...clock.env });
  [a, b] = fleet.members as [Tollgate, Tollgate];
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

const withToken = (t: Tollgate, token: string, path: string, client = '192.0.2.1') =>
  fetch(t.url + path, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': client } });

it('refuses a token deleted on one replica there at once and on the other within 1 s, and an expired one at its instant', async () => {
  const created = await a.admin('POST', '/tollgate/admin-tokens', { name: 'support', scopes: ['keys:read'] });
  expect(created.status).toBe(201);
  const token = created.body.secret as string;
  expect((await withToken(b, token, '/consumer-api-key')).status).toBe(200);
  expect((await withToken(b, token, '/rate-limit')).status).toBe(403);
  // In use on both replicas, so each has it read (the other keeps it at most 500 ms before reading again).
  expect((await withToken(a, token, '/consumer-api-key')).status).toBe(200);
  expect((await withToken(b, token, '/consumer-api-key')).status).toBe(200);
  expect((await a.admin('DELETE', `/tollgate/admin-tokens/${created.body.id}`)).status).toBe(200);
  const deletedAt = performance.now();
  expect((await withToken(a, token, '/consumer-api-key')).status).toBe(401);
  // To the send time of b's first refusal: on a loaded machine an answer's own time is not the delay.
  const refusedOnB = async () => (await withToken(b, token, '/consumer-api-key')).status === 401;
  expect(await msUntilSeenEverywhere(deletedAt, [refusedOnB])).toBeLessThan(1_000);
  expect((await withToken(b, token, '/consumer-api-key')).status).toBe(401);

  const expiresAtMs = (Math.floor(clock.now() / 1000) + 2) * 1000;
  const expiring = await a.admin('POST', '/tollgate/admin-tokens', {
    name: 'temp',
    scopes: ['keys:read'],
    expiresAt: new Date(expiresAtMs).toISOString().slice(0, 19) + 'Z',
  });
  expect((await withToken(b, expiring.body.secret, '/consumer-api-key')).status).toBe(200);
  clock.advance(expiresAtMs - clock.now() + 20);
  expect((await withToken(a, expiring.body.secret, '/consumer-api-key')).status).toBe(401);
  expect((await withToken(b, expiring.body.secret, '/consumer-api-key')).status).toBe(401);
}, 30_000);

/** Moves the replicas' clock to the start of a minute (the throttles' window), so a burst sent now falls in one. */
function startOfAMinute(): void {
  clock.after(MINUTE_MS, 0);
}

/**
 * Sends every wrong credential at once, round-robin over `replicas`, from one client address, and
 * counts the answers: a 401 is a guess that was checked, a 429 one that was refused unchecked.
 */
async function burstOfGuesses(
  replicas: readonly Tollgate[],
  credentials: readonly string[],
  path: string,
  client: string,
) {
  const statuses = await Promise.all(
    credentials.map((credential, i) =>
      withToken(replicas[i % replicas.length]!, credential, path, client).then((r) => r.status),
    ),
  );
  expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
  return statuses.filter((s) => s === 401).length;
}

const wrongRootTokens = (n: number) => Array.from({ length: n }, (_, i) => `wrong-token-${i}`);
// Admin-token-shaped guesses are checked against the database: the slow path, where answers overlap.
const wrongAdminTokens = (n: number) =>
  Array.from({ length: n }, () => 'tga_' + randomBytes(32).toString('base64url'));
const wrongKeys = (n: number) =>
  Array.from({ length: n }, () => 'tg_' + randomBytes(32).toString('base64url'));

describe('wrong management credentials sent all at once share one budget of 20 a minute', () => {
  it('on one replica: 20 checked, the rest refused unchecked', async () => {
    startOfAMinute();
    const guesses = [...wrongRootTokens(30), ...wrongAdminTokens(30)].sort(() => Math.random() - 0.5);
    const checked = await burstOfGuesses([a], guesses, '/consumer-api-key', '198.51.100.10');
    // One guess may be checked before the shared count is asked (an address with no failure yet).
    expect(checked).toBeGreaterThanOrEqual(20);
    expect(checked).toBeLessThanOrEqual(21);
    expect((await withToken(a, a.rootToken, '/consumer-api-key', '198.51.100.10')).status).toBe(429);
  }, 90_000);

  it('across two replicas: 20 checked in all, not 20 each', async () => {
    startOfAMinute();
    const guesses = [...wrongRootTokens(40), ...wrongAdminTokens(40)].sort(() => Math.random() - 0.5);
    const checked = await burstOfGuesses([a, b], guesses, '/consumer-api-key', '198.51.100.20');
    expect(checked).toBeGreaterThanOrEqual(20);
    expect(checked).toBeLessThanOrEqual(22);
    // The right token from that address is throttled too, on both; another address is not affected.
    for (const t of [a, b])
      expect((await withToken(t, t.rootToken, '/consumer-api-key', '198.51.100.20')).status).toBe(429);
    expect((await withToken(a, a.rootToken, '/consumer-api-key', '198.51.100.21')).status).toBe(200);
  }, 90_000);
});

describe('wrong API keys sent all at once share one budget of 100 a minute', () => {
  it('on one replica: 100 checked, the rest refused unchecked', async () => {
    startOfAMinute();
    const checked = await burstOfGuesses([a], wrongKeys(200), '/v1/items', '198.51.100.30');
    expect(checked).toBeGreaterThanOrEqual(100);
    expect(checked).toBeLessThanOrEqual(101);
    expect(await burstOfGuesses([a], wrongKeys(50), '/v1/items', '198.51.100.30')).toBe(0);
  }, 90_000);

  it('across two replicas: 100 checked in all, not 100 each, while a known key keeps working from that address', async () => {
    const key = await a.admin('POST', '/consumer-api-key/create', { name: 'behind the same NAT' });
    for (const t of [a, b])
      expect((await withToken(t, key.body.secret, '/v1/items', '198.51.100.40')).status).toBe(200);
    startOfAMinute();
    const checked = await burstOfGuesses([a, b], wrongKeys(400), '/v1/items', '198.51.100.40');
    expect(checked).toBeGreaterThanOrEqual(100);
    expect(checked).toBeLessThanOrEqual(102);
    for (const t of [a, b])
      expect((await withToken(t, key.body.secret, '/v1/items', '198.51.100.40')).status).toBe(200);
  }, 90_000);
});
