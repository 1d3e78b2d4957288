/**
 * Usage over time across three replicas on Redis and Postgres, one of them SIGKILLed under load: the
 * totals miss at most what the killed replica answered in its last second, the key's buckets add up to
 * the totals at every granularity, its series by route too (each route missing at most that second),
 * and the fleet view counts the same requests.
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
  const route = { routeId: 'metered', match: { pathPrefix: '/v1/metered' }, upstreamUrl: fleet.backend.url };
  expect((await a.admin('POST', '/tollgate/routes', route)).status).toBe(201);
  // In force on every replica within a second (docs/guides/routes.md).
  await sleep(1_500);
  let answered = 0;
  /** Answers by route: `metered`, or the catch-all (null). */
  const answeredOn = new Map<string | null, number>([
    ['metered', 0],
    [null, 0],
  ]);
  /** When the killed replica's answers arrived (performance.now()). */
  const answeredByKilled: number[] = [];
  let running = true;
  const loop = async (t: Tollgate) => {
    for (let i = 0; running && t.process.exitCode === null && t.process.signalCode === null; i++) {
      const routeId = i % 3 === 0 ? null : 'metered';
      if ((await hit(t, key.secret, routeId === null ? '/v1/free' : '/v1/metered')) === 200) {
        answered++;
        answeredOn.set(routeId, answeredOn.get(routeId)! + 1);
        if (t === c) answeredByKilled.push(performance.now());
      }
    }
  };
  const loops = [a, b, c, a, b, c].map(loop);
  // Killed once it has been answering for 1.5 s (a loaded machine slows its first answers), so that
  // some of what it answered is older than its last second: the totals must hold those.
  await waitFor(
    async () => answeredByKilled[0],
    (first) => first !== undefined && performance.now() - first > 1_500,
    { timeoutMs: 30_000, what: 'the replica to kill answering for 1.5 s' },
  );
  const killedAt = performance.now();
  c.process.kill('SIGKILL');
  await sleep(1_500);
  running = false;
  await Promise.all(loops);

  // Wait until the survivors' usage has all reached Postgres (the detail stops moving).
  const total = async () =>
    (await a.admin('GET', `/consumer-api-key/${key.id}`)).body.usage.totalRequests as number;
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
  if (settled === undefined) throw new Error('the total never stopped moving');
  // At most the killed replica's last second is missing (docs/guides/operations.md, Faults): what it answered in the
  // second before the kill, give or take how late its once-a-second flush timer ran under this load
  // (beside a CPU burner on a 2-CPU VM, a whole suite made it more than 100 ms late).
  const TIMER_LATENESS_MS = 500;
  const lastSecond = answeredByKilled.filter((at) => at > killedAt - 1_000 - TIMER_LATENESS_MS).length;
  expect(answeredByKilled.length).toBeGreaterThan(lastSecond);
  expect(settled).toBeLessThanOrEqual(answered);
  expect(answered - settled).toBeLessThanOrEqual(lastSecond);
  for (const granularity of ['minute', 'hour', 'day', 'month']) {
    const res = await b.admin(
      'GET',
      `/consumer-api-key/${key.id}/usage?granularity=${granularity}&from=${new Date(Date.now() - 3_600_000).toISOString().slice(0, 19)}Z`,
    );
    expect(res.status).toBe(200);
    expect((res.body.buckets as { requests: number }[]).reduce((n, bucket) => n + bucket.requests, 0)).toBe(
      settled,
    );
  }
  // By route: together the totals, each route short of what its clients got by at most that second.
  const byRoute = await b.admin(
    'GET',
    `/consumer-api-key/${key.id}/usage?granularity=day&from=${new Date(Date.now() - 3_600_000).toISOString().slice(0, 19)}Z&groupBy=route`,
  );
  const routeTotals = new Map<string | null, number>(
    (byRoute.body.series as { routeId: string | null; buckets: { requests: number }[] }[]).map((s) => [
      s.routeId,
      s.buckets.reduce((n, bucket) => n + bucket.requests, 0),
    ]),
  );
  expect([...routeTotals.keys()].sort()).toEqual(['metered', null].sort());
  expect([...routeTotals.values()].reduce((n, r) => n + r, 0)).toBe(settled);
  for (const [routeId, total] of routeTotals) {
    expect(total).toBeLessThanOrEqual(answeredOn.get(routeId)!);
    expect(answeredOn.get(routeId)! - total).toBeLessThanOrEqual(lastSecond);
  }
  // The fleet view reads Postgres alone: it catches up once the usage still in Redis is flushed, which
  // takes until the lock expires when the killed replica was the one flushing.
  const { value: top } = await waitFor(
    async () =>
      (await a.admin('GET', '/tollgate/usage?granularity=hour')).body.topKeys[0] as
        { consumerApiKeyId: string; requests: number } | undefined,
    (t) => t?.requests === settled,
    { timeoutMs: 20_000, everyMs: 500 },
  );
  expect(top).toMatchObject({ consumerApiKeyId: key.id, requests: settled });
}, 60_000);
