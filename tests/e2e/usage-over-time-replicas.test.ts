/**
 * Usage over time across three replicas on Redis and Postgres, one of them SIGKILLed under load: the
 * key's buckets add up to its totals at every granularity (the killed replica's last second is
 * missing from both alike), and the fleet view counts the same requests.
 */
import { hit, keyWithPlan, sleep, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

let fleet: Fleet;

beforeAll(async () => {
  fleet = await startFleet(3);
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

it('adds up to the totals after a replica is killed mid-run', async () => {
  const [a, b, c] = fleet.members as [Tollgate, Tollgate, Tollgate];
  const key = await keyWithPlan(a, 'billed', 10_000_000);
  let answered = 0;
  let running = true;
  const loop = async (t: Tollgate) => {
    while (running && t.process.exitCode === null && t.process.signalCode === null) {
      if ((await hit(t, key.secret, '/v1/metered')) === 200) answered++;
    }
  };
  const loops = [a, b, c, a, b, c].map(loop);
  await sleep(1_500);
  c.process.kill('SIGKILL');
  await sleep(1_500);
  running = false;
  await Promise.all(loops);

  // Wait until the survivors' usage has all reached Postgres (the detail stops moving).
  const total = async () => (await a.admin('GET', `/consumer-api-key/${key.id}`)).body.usage.totalRequests as number;
  let last = -1;
  const { value: settled } = await waitFor(
    async () => {
      const now = await total();
      const same = now === last;
      last = now;
      return same ? now : undefined;
    },
    (v) => v !== undefined,
    { timeoutMs: 15_000, everyMs: 1_500 },
  );
  // At most the killed replica's last second is missing.
  expect(settled).toBeLessThanOrEqual(answered);
  expect(settled).toBeGreaterThan(answered * 0.5);
  for (const granularity of ['minute', 'hour', 'day', 'month']) {
    const res = await b.admin('GET', `/consumer-api-key/${key.id}/usage?granularity=${granularity}&from=${new Date(Date.now() - 3_600_000).toISOString().slice(0, 19)}Z`);
    expect(res.status).toBe(200);
    expect((res.body.buckets as { requests: number }[]).reduce((n, bucket) => n + bucket.requests, 0)).toBe(settled);
  }
  const fleetView = await a.admin('GET', '/tollgate/usage?granularity=hour');
  expect(fleetView.body.topKeys[0]).toMatchObject({ consumerApiKeyId: key.id, requests: settled });
}, 60_000);
