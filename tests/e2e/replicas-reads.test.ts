/**
 * The key detail read while usage flows: every second replicas push to Redis and a flusher moves the
 * usage into Postgres, and a detail read on any replica at any moment must show each answered
 * request once — never a second's usage twice (read from Postgres after a flush committed it and from
 * Redis before the flush removed it), never requests answered more than 2 s ago missing.
 */
import { hit, keyWithPlan, sleep, startFleet, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

const LOOPS = 2;

let fleet: Fleet;
let serving: Tollgate;
let other: Tollgate;

beforeAll(async () => {
  fleet = await startFleet(2);
  [serving, other] = fleet.members as [Tollgate, Tollgate];
}, 60_000);

afterAll(() => fleet?.stop(), 60_000);

it('shows each request once in every detail read taken while usage is pushed and flushed', async () => {
  const key = await keyWithPlan(serving, 'steady');
  const answeredAt: number[] = [];
  const answeredBy = (t: number) => answeredAt.filter((a) => a <= t).length;
  const statuses: number[] = [];
  let running = true;
  const load = async () => {
    while (running) {
      const status = await hit(serving, key.secret, '/v1/steady');
      answeredAt.push(performance.now());
      if (status !== 200) statuses.push(status);
    }
  };
  const wrong: string[] = [];
  let reads = 0;
  const read = async (t: Tollgate, name: string) => {
    while (running) {
      const started = performance.now();
      const detail = await t.admin('GET', `/consumer-api-key/${key.id}`);
      const ended = performance.now();
      expect(detail.status).toBe(200);
      reads++;
      const shown = detail.body.usage.totalRequests as number;
      // At most the requests answered by the end of the read (plus those being answered right then)…
      const most = answeredBy(ended) + LOOPS;
      // …and at least those answered 2 s before it began.
      const least = answeredBy(started - 2_000);
      if (shown > most || shown < least) wrong.push(`${name}: ${shown} shown, answered ${least}..${most}`);
    }
  };
  const jobs = [
    ...Array.from({ length: LOOPS }, load),
    read(serving, 'serving replica'),
    read(other, 'other replica'),
  ];
  await sleep(8_000);
  running = false;
  await Promise.all(jobs);

  console.log(
    `${answeredAt.length} requests, ${reads} detail reads meanwhile, ${wrong.length} wrong: ${wrong.slice(0, 5).join('; ')}`,
  );
  expect(statuses).toEqual([]);
  expect(answeredAt.length).toBeGreaterThan(50);
  expect(wrong).toEqual([]);
}, 60_000);
