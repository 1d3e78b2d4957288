/**
 * Usage-priced requests through three built replicas (Redis + Postgres), docs/guides/usage-priced-apis.md:
 * each request reserves 10 units and its backend reports between 0 and 10 in a header, settled when the
 * response ends on whichever replica served it. A limit and a balance, both bound by reservations that
 * bound the answers, end charged exactly the units reported for the requests admitted, never more than
 * they held, the same on every replica; a request on a replica SIGKILLed mid-response keeps its
 * reservation.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFleet, waitFor, type Fleet } from './helpers/replicas.js';

const LIMIT = 2_000;
const CREDITS = 1_500;
const RESERVED = 10;

let fleet: Fleet;
let reporter: Server;
let reporterUrl: string;
const held: ServerResponse[] = [];

beforeAll(async () => {
  // Reports the units the path asks for: /v1/units/7 used 7.
  // /v1/units/held/3 reports 3 too, but holds its body open until the test ends it.
  reporter = createServer((req, res) => {
    const units = /\/v1\/units\/(?:held\/)?(\d+)/.exec(req.url ?? '')?.[1] ?? '0';
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain', 'x-units-used': units });
    if (!req.url?.includes('/held/')) return void res.end('ok');
    res.write('partial');
    held.push(res);
  });
  await new Promise<void>((resolve) => reporter.listen(0, '127.0.0.1', resolve));
  reporterUrl = `http://127.0.0.1:${(reporter.address() as AddressInfo).port}`;
  fleet = await startFleet(3, { UPSTREAM_URL: reporterUrl });
}, 120_000);

afterAll(async () => {
  for (const res of held) res.end();
  await fleet?.stop();
  await new Promise<void>((resolve) => reporter.close(() => resolve()));
}, 60_000);

/** A repeatable sequence of units in 0…10. */
function unitsDrawn(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % (RESERVED + 1);
  };
}

it('charges a limit and a balance across three replicas exactly the units the backend reported, never beyond them', async () => {
  const [admin] = fleet.members;
  const plan = await admin!.admin('POST', '/rate-limit/create', {
    rateLimitId: 'units',
    unit: 'units',
    limits: [{ name: 'units', limit: LIMIT, period: 'day' }],
    costs: [{ match: { pathPrefix: '/v1/units' }, cost: RESERVED, settle: { header: 'x-units-used' } }],
  });
  expect(plan.status).toBe(201);
  const key = await admin!.admin('POST', '/consumer-api-key/create', {
    name: 'metered',
    rateLimitId: 'units',
    credits: { remaining: CREDITS },
  });
  expect(key.status).toBe(201);

  const draw = unitsDrawn(3);
  let reported = 0;
  let admitted = 0;
  let refused = 0;
  // 3 replicas × 6 clients × 40 requests: 720 reservations of 10, far more than the balance holds.
  await Promise.all(
    fleet.members.flatMap((member) =>
      Array.from({ length: 6 }, async () => {
        for (let i = 0; i < 40; i++) {
          const units = draw();
          const res = await fetch(`${member.url}/v1/units/${units}`, {
            headers: { authorization: `Bearer ${key.body.secret}` },
          });
          await res.text();
          if (res.status === 200) {
            admitted++;
            reported += units;
          } else {
            expect(res.status).toBe(429);
            refused++;
          }
        }
      }),
    ),
  );
  expect(refused).toBeGreaterThan(0);
  // Refunds let more in than reservations alone would (1,500 / 10 = 150).
  expect(admitted).toBeGreaterThan(150);
  expect(reported).toBeLessThanOrEqual(CREDITS);
  for (const member of fleet.members) {
    const { value } = await waitFor(
      async () => (await member.admin('GET', `/consumer-api-key/${key.body.id}`)).body,
      (detail) =>
        detail.credits.remaining === CREDITS - reported &&
        detail.usage.rateLimits.limits[0].remaining === LIMIT - reported,
      { what: 'every settlement charged, on this replica' },
    );
    expect(value.credits.remaining).toBe(CREDITS - reported);
  }
});

it('keeps the reservation of a request whose replica is SIGKILLed mid-response', async () => {
  const [admin, , doomed] = fleet.members;
  const key = await admin!.admin('POST', '/consumer-api-key/create', {
    name: 'cut short',
    rateLimitId: 'units',
    credits: { remaining: CREDITS },
  });
  expect(key.status).toBe(201);
  const res = await fetch(`${doomed!.url}/v1/units/held/3`, {
    headers: { authorization: `Bearer ${key.body.secret}` },
  });
  const reader = res.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toBe('partial');
  await doomed!.stop('SIGKILL');
  await expect(reader.read()).rejects.toThrow();
  const detail = (await admin!.admin('GET', `/consumer-api-key/${key.body.id}`)).body;
  // Reserved 10 and never settled: the 3 reported never reached a replica that lived.
  expect(detail.credits.remaining).toBe(CREDITS - RESERVED);
  expect(detail.usage.rateLimits.limits[0].remaining).toBe(LIMIT - RESERVED);
});
