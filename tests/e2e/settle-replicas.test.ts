/**
 * Usage-priced requests through three built replicas (Redis + Postgres), docs/guides/usage-priced-apis.md:
 * each request reserves 10 units and its backend reports between 0 and 10 in a header, settled when the
 * response ends on whichever replica served it. A limit and a balance, both bound by reservations that
 * bound the answers, end charged exactly the units reported for the requests admitted, never more than
 * they held, the same on every replica. A request in flight on a replica SIGKILLed mid-response keeps
 * its reservation, and counts in usage once, unsettled, at its reservation (docs/decisions/0224), with
 * Redis and embedded; one that ended after it was written down counts once, settled. The presets read
 * alike on every replica: a gzip answer decoded, a Responses API stream whose last event is megabytes,
 * a cached Anthropic prompt whole.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { Redis } from 'ioredis';
import { REDIS_URL } from '../helpers/services.js';
import { metric, startEmbedded, startFleet, waitFor, type Fleet } from './helpers/replicas.js';
import type { Tollgate } from './helpers/tollgate.js';

const LIMIT = 2_000;
const CREDITS = 1_500;
const RESERVED = 10;
/** A generated image in base64, as the Responses API streams one. */
const IMAGE = Buffer.alloc(2 * 1024 * 1024, 0x5a).toString('base64');

let fleet: Fleet;
let embedded: Fleet | undefined;
let reporter: Server;
let reporterUrl: string;
const held: ServerResponse[] = [];

beforeAll(async () => {
  // Reports the units the path asks for: /v1/units/7 used 7.
  // /v1/units/held/3 reports 3 too, but holds its body open until the test ends it.
  reporter = createServer((req, res) => {
    req.resume();
    // /v1/coded/7: an OpenAI-style JSON answer reporting 7 tokens, in gzip.
    const coded = /\/v1\/coded\/(\d+)/.exec(req.url ?? '')?.[1];
    if (coded !== undefined) {
      const body = gzipSync(
        JSON.stringify({ object: 'chat.completion', usage: { total_tokens: Number(coded) } }),
      );
      return void res
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end(body);
    }
    // /v1/responses/7: a Responses API stream whose last event holds a drawn image (megabytes), then 7 tokens.
    const responses = /\/v1\/responses\/(\d+)/.exec(req.url ?? '')?.[1];
    if (responses !== undefined) {
      const completed = {
        type: 'response.completed',
        response: {
          output: [{ type: 'image_generation_call', result: IMAGE }],
          usage: { total_tokens: Number(responses) },
        },
      };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: response.created\ndata: {"type":"response.created","response":{"usage":null}}\n\n');
      return void res.end(`event: response.completed\ndata: ${JSON.stringify(completed)}\n\n`);
    }
    // /v1/cached/7: an Anthropic answer of 7 tokens, all but the two of its answer and uncached prompt read from the cache.
    const cached = /\/v1\/cached\/(\d+)/.exec(req.url ?? '')?.[1];
    if (cached !== undefined) {
      const usage = { input_tokens: 1, cache_read_input_tokens: Number(cached) - 2, output_tokens: 1 };
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ usage }));
    }
    const units = /\/v1\/units\/(?:held\/)?(\d+)/.exec(req.url ?? '')?.[1] ?? '0';
    res.writeHead(200, { 'content-type': 'text/plain', 'x-units-used': units });
    if (!req.url?.includes('/held/')) return void res.end('ok');
    res.write('partial');
    held.push(res);
  });
  await new Promise<void>((resolve) => reporter.listen(0, '127.0.0.1', resolve));
  reporterUrl = `http://127.0.0.1:${(reporter.address() as AddressInfo).port}`;
  // A replica killed is found gone within 3 s: its records in flight are swept then.
  // It counts and does not time Redis: a command answered late to a replica starved of CPU must not
  // count as Redis failing (docs/decisions/0230).
  fleet = await startFleet(3, {
    UPSTREAM_URL: reporterUrl,
    CONCURRENCY_LEASE_SECONDS: '3',
    REDIS_COMMAND_TIMEOUT_MS: '5000',
  });
}, 120_000);

afterAll(async () => {
  for (const res of held) res.end();
  await fleet?.stop();
  await embedded?.stop();
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
  await unitsPlan(admin!);
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

it('reads the units of a gzip-coded answer decoded, on every replica, and passes it on coded', async () => {
  const key = await tokensKey('coded', [
    { match: { pathPrefix: '/v1/coded' }, cost: RESERVED, settle: { preset: 'openai' } },
  ]);
  const draw = unitsDrawn(5);
  let reported = 0;
  for (const member of fleet.members)
    for (let i = 0; i < 5; i++) {
      const units = draw();
      const res = await fetch(`${member.url}/v1/coded/${units}`, {
        headers: { authorization: `Bearer ${key.body.secret}` },
      });
      expect(res.headers.get('content-encoding')).toBe('gzip');
      expect(JSON.parse(await res.text())).toMatchObject({ usage: { total_tokens: units } });
      reported += units;
    }
  await settledEverywhere(key.body.id, reported);
});

it('reads a Responses API stream whose last event is megabytes, and a cached Anthropic prompt whole, on every replica', async () => {
  const key = await tokensKey('presets', [
    { match: { pathPrefix: '/v1/responses' }, cost: RESERVED, settle: { preset: 'openai' } },
    { match: { pathPrefix: '/v1/cached' }, cost: RESERVED, settle: { preset: 'anthropic' } },
  ]);
  const draw = unitsDrawn(11);
  let reported = 0;
  for (const member of fleet.members)
    for (const kind of ['responses', 'cached'])
      for (let i = 0; i < 3; i++) {
        const units = 2 + draw();
        const res = await fetch(`${member.url}/v1/${kind}/${units}`, {
          headers: { authorization: `Bearer ${key.body.secret}` },
        });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        reported += units;
      }
  await settledEverywhere(key.body.id, reported);
});

/** A key with CREDITS on a new plan `id` of LIMIT tokens a day, priced by `costs`, made on the first replica. */
async function tokensKey(id: string, costs: unknown[]) {
  const admin = fleet.members[0]!;
  const plan = await admin.admin('POST', '/rate-limit/create', {
    rateLimitId: id,
    unit: 'tokens',
    limits: [{ name: 'tokens', limit: LIMIT, period: 'day' }],
    costs,
  });
  expect(plan.status).toBe(201);
  const key = await admin.admin('POST', '/consumer-api-key/create', {
    name: id,
    rateLimitId: id,
    credits: { remaining: CREDITS },
  });
  expect(key.status).toBe(201);
  return key;
}

/** Waits until every replica shows the key's limit and balance charged exactly `reported` units. */
async function settledEverywhere(keyId: string, reported: number): Promise<void> {
  for (const member of fleet.members)
    await waitFor(
      () => usageOf(member, keyId),
      (detail) =>
        detail.credits.remaining === CREDITS - reported &&
        detail.usage.rateLimits.limits[0].remaining === LIMIT - reported,
      { what: 'every answer settled at the units it reported, on this replica' },
    );
}

/** The plan of these tests, on the deployment `admin` belongs to: 10 units reserved, the header settles. */
async function unitsPlan(admin: Tollgate): Promise<void> {
  const plan = await admin.admin('POST', '/rate-limit/create', {
    rateLimitId: 'units',
    unit: 'units',
    limits: [{ name: 'units', limit: LIMIT, period: 'day' }],
    costs: [{ match: { pathPrefix: '/v1/units' }, cost: RESERVED, settle: { header: 'x-units-used' } }],
  });
  expect(plan.status).toBe(201);
}

/**
 * A request on `member` whose backend reports 3 units and holds its body open, once `member` has
 * written it down as in flight: its reader, and the backend's response to end it.
 */
async function heldInFlight(member: Tollgate, secret: string) {
  const res = await fetch(`${member.url}/v1/units/held/3`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  const reader = res.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toBe('partial');
  const backend = held.at(-1)!;
  await waitFor(
    () => metric(member, 'tollgate_requests_in_flight_written'),
    (n) => n === 1,
    { what: 'the request written down as in flight' },
  );
  return { reader, backend };
}

const usageOf = async (member: Tollgate, keyId: string) =>
  (await member.admin('GET', `/consumer-api-key/${keyId}`)).body;

it('counts a request in flight on a replica SIGKILLed mid-response once, unsettled at its reservation, which stays charged', async () => {
  const [admin, survivor, doomed] = fleet.members;
  const key = await admin!.admin('POST', '/consumer-api-key/create', {
    name: 'cut short',
    rateLimitId: 'units',
    credits: { remaining: CREDITS },
  });
  expect(key.status).toBe(201);
  // Written down, then ended: taken back and settled at its 3 units, once.
  const ended = await heldInFlight(doomed!, key.body.secret);
  ended.backend.end();
  while (!(await ended.reader.read()).done);
  await waitFor(
    () => metric(doomed!, 'tollgate_requests_in_flight_written'),
    (n) => n === 0,
  );
  // In Redis before the kill: a SIGKILL loses the usage of the second before it.
  await waitFor(
    () => usageOf(admin!, key.body.id),
    (detail) => detail.usage.totalRequests === 1,
  );
  // Written down, then its replica killed.
  const cut = await heldInFlight(doomed!, key.body.secret);
  await doomed!.stop('SIGKILL');
  await expect(cut.reader.read()).rejects.toThrow();
  const records = new Redis(REDIS_URL);
  try {
    // A survivor's sweep takes the record out once its deadline passed: either may, only one does. (The
    // first request's record stays a while, marked as taken by its replica.)
    const open = async () =>
      (await records.hvals(`${fleet.replicas.env.REDIS_KEY_PREFIX}{reservations}`)).filter((r) =>
        r.startsWith('{'),
      ).length;
    await waitFor(open, (n) => n === 0, {
      timeoutMs: 30_000,
      what: 'the record of the request cut short swept',
    });
  } finally {
    records.disconnect();
  }
  // Counted by the sweep that took it, or, its answer lost to a machine too busy, by the next, five
  // seconds on (docs/decisions/0250-a-sweep-redis-never-answered.md).
  const { value: detail } = await waitFor(
    () => usageOf(admin!, key.body.id),
    (d) => d.usage.totalRequests === 2,
    { timeoutMs: 30_000, what: 'the request cut short counted' },
  );
  expect({ cost: detail.usage.cost, unsettled: detail.usage.unsettled }).toEqual({
    cost: 3 + RESERVED,
    unsettled: 1,
  });
  const swept = await Promise.all(
    [admin!, survivor!].map((m) => metric(m, 'tollgate_unsettled_requests_total{reason="replica-gone"}')),
  );
  expect(swept.reduce((n: number, m) => n + (m ?? 0), 0)).toBe(1);
  // Reserved 10 and never settled: the 3 it reported never reached a replica that lived.
  expect(detail.credits.remaining).toBe(CREDITS - 3 - RESERVED);
  expect(detail.usage.rateLimits.limits[0].remaining).toBe(LIMIT - 3 - RESERVED);
  // Every replica shows it alike, once the replica that swept it handed it over.
  const { value: elsewhere } = await waitFor(
    () => usageOf(survivor!, key.body.id),
    (d) => d.usage.totalRequests === 2,
  );
  expect(elsewhere.usage).toMatchObject({ cost: 3 + RESERVED, unsettled: 1 });
});

it('counts a request in flight on an embedded Tollgate SIGKILLed mid-response once, unsettled, at the restart', async () => {
  embedded = await startEmbedded({ UPSTREAM_URL: reporterUrl });
  const [first] = embedded.members;
  await unitsPlan(first!);
  const key = await first!.admin('POST', '/consumer-api-key/create', { name: 'cut', rateLimitId: 'units' });
  expect(key.status).toBe(201);
  const cut = await heldInFlight(first!, key.body.secret);
  await first!.stop('SIGKILL');
  await expect(cut.reader.read()).rejects.toThrow();
  const [restarted] = await embedded.replicas.start();
  const expected = { totalRequests: 1, cost: RESERVED, unsettled: 1 };
  await waitFor(
    () => usageOf(restarted!, key.body.id),
    (detail) => detail.usage.totalRequests === 1,
  );
  expect((await usageOf(restarted!, key.body.id)).usage).toMatchObject(expected);
  expect(await metric(restarted!, 'tollgate_unsettled_requests_total{reason="replica-gone"}')).toBe(1);
  // Counted for good: the start after this one finds nothing more to count.
  await restarted!.stop();
  const [again] = await embedded.replicas.start();
  expect((await usageOf(again!, key.body.id)).usage).toMatchObject(expected);
  expect(await metric(again!, 'tollgate_unsettled_requests_total{reason="replica-gone"}')).toBeUndefined();
});
