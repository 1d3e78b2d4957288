/**
 * A plan of a burst limit and a per-minute quota across three built replicas on Redis and Postgres
 * (docs/guides/plans.md): under bursts from all three, exactly the minute's limit reaches the backend in
 * the minute, and never more than the burst limit in any UTC second.
 */
import { MINUTE_MS, SECOND_MS, TestClock } from '../helpers/test-clock.js';
import { hitFull, startFleet, type Fleet } from './helpers/replicas.js';

let fleet: Fleet;
/** The replicas' clock: moved to each second rather than waiting for it. */
const clock = new TestClock();

beforeAll(async () => {
  fleet = await startFleet(3, clock.env);
}, 120_000);

afterAll(() => fleet?.stop(), 60_000);

it('admits exactly 40 in the minute and at most 5 in any second, summed over three replicas', async () => {
  const [admin] = fleet.members;
  const rateLimitId = 'burst-and-minute';
  const created = await admin!.admin('POST', '/rate-limit/create', {
    rateLimitId,
    limits: [
      { name: 'burst', limit: 5, period: 'second' },
      { name: 'per-minute', limit: 40, period: 'minute' },
    ],
  });
  expect(created.status).toBe(201);
  const key = (await admin!.admin('POST', '/consumer-api-key/create', { name: 'bursty', rateLimitId }))
    .body as { id: string; secret: string };

  // Each replica looks the key up once before the minute (its first request reads the database), so
  // that the first burst is answered as quickly as the others, within its second on a loaded machine.
  for (const member of fleet.members)
    expect((await hitFull(member, key.secret, '/v1/warm-up')).status).toBe(200);
  // Twelve bursts, one a second, all inside one minute: the start of one.
  clock.after(MINUTE_MS, 0);
  const minute = Math.floor(clock.now() / MINUTE_MS);
  /** Each answer with the span it was decided in: after it was sent, before it was answered. */
  const bursts: { status: number; name?: string; sent: number; answered: number }[][] = [];
  for (let s = 0; s < 12; s++) {
    // Each burst at the start of its second (the clock is moved there, so no timer's lateness eats into
    // it), 30 requests spread over the three replicas.
    clock.after(SECOND_MS, 20);
    const answers = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const sent = clock.now();
        const a = await hitFull(fleet.members[i % 3]!, key.secret, `/v1/burst/${s}`);
        if (s === 0 && a.status === 200)
          expect(a.headers.get('ratelimit-policy')).toBe('"burst";q=5;w=1, "per-minute";q=40;w=60');
        return {
          status: a.status,
          name: a.status === 429 ? (a.body.name as string) : undefined,
          sent,
          answered: clock.now(),
        };
      }),
    );
    bursts.push(answers);
  }
  expect(Math.floor(clock.now() / MINUTE_MS)).toBe(minute);
  const all = bursts.flat();
  expect(all.filter((a) => a.status !== 200 && a.status !== 429)).toEqual([]);

  // Exactly the minute's limit reached the backend, from the three replicas together.
  expect(fleet.backend.received.filter((r) => r.url.startsWith('/v1/burst/'))).toHaveLength(40);
  expect(all.filter((a) => a.status === 200)).toHaveLength(40);
  // No UTC second admitted more than the burst limit. An answer sent and received in the same second
  // was decided in it; one that came after its second ended (a loaded machine) could have been decided
  // in either, so it says nothing about either second (counting it in both would charge one second with
  // the admissions of its neighbour). Nearly all answers are of the first kind.
  const withinTheirSecond = all.filter((a) => Math.floor(a.sent / 1_000) === Math.floor(a.answered / 1_000));
  expect(withinTheirSecond.length).toBeGreaterThan(all.length * 0.9);
  const perSecond = new Map<number, number>();
  for (const a of withinTheirSecond.filter((x) => x.status === 200))
    perSecond.set(Math.floor(a.sent / 1_000), (perSecond.get(Math.floor(a.sent / 1_000)) ?? 0) + 1);
  expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(5);
  // The first bursts each admit the burst limit and are refused by it; the eighth fills the minute too,
  // so its refusals, like every later one, name the full limit whose window ends last: the minute.
  expect(bursts.slice(0, 8).map((b) => b.filter((a) => a.status === 200).length)).toEqual([
    5, 5, 5, 5, 5, 5, 5, 5,
  ]);
  expect(bursts.slice(0, 7).flatMap((b) => b.filter((a) => a.status === 429).map((a) => a.name))).toEqual(
    Array(7 * 25).fill('burst'),
  );
  expect(bursts.slice(7).flatMap((b) => b.filter((a) => a.status === 429).map((a) => a.name))).toEqual(
    Array(25 + 4 * 30).fill('per-minute'),
  );

  // One more in the same minute, by value: the minute refuses it, and says until when.
  const sent = clock.now();
  const refused = await hitFull(fleet.members[1]!, key.secret, '/v1/after');
  const answered = clock.now();
  expect(Math.floor(answered / 60_000)).toBe(minute);
  const end = (minute + 1) * 60_000;
  expect(refused.status).toBe(429);
  expect(refused.body).toEqual({
    error: 'Rate limit exceeded',
    code: 'rate_limit_exceeded',
    limit: 40,
    period: 'minute',
    remaining: 0,
    resetTime: new Date(end).toISOString().slice(0, 19) + 'Z',
    name: 'per-minute',
    scope: 'key',
    per: 'key',
  });
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(Math.ceil((end - answered) / 1_000));
  expect(retryAfter).toBeLessThanOrEqual(Math.ceil((end - sent) / 1_000));
  expect(refused.headers.get('ratelimit-policy')).toBe('"burst";q=5;w=1, "per-minute";q=40;w=60');
  expect(refused.headers.get('ratelimit')).toBe(`"per-minute";r=0;t=${retryAfter}`);
  expect(fleet.backend.received.filter((r) => r.url === '/v1/after')).toHaveLength(0);
}, 120_000);
