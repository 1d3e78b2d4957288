/**
 * Verify's reservations (docs/guides/usage-priced-apis.md#verify): `reserve` charges units now and
 * answers a `reservationId`; `POST /tollgate/verify/settle` charges `units − reserved` to what the
 * reservation was charged to and counts the request once, at its settled units, from any replica;
 * settled twice, unknown or past RESERVATION_TTL_SECONDS it is 404 `reservation_not_found`, and one
 * never settled keeps its reservation as its cost. Embedded mode, and two replicas on one Redis and
 * one Postgres database. The clocks are driven: nothing waits for the wall clock to pass a deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { waitFor } from '../helpers/poll.js';
import { ModelBackend, sendJson } from '../helpers/model-backend.js';
import { RedisServer } from '../helpers/redis-server.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';
import { createTestDatabase, REDIS_URL, testKeyPrefix, type TestDatabase } from '../helpers/services.js';

afterAll(closeDatabase);

const TTL_SECONDS = 60;
const DAY_LIMIT = 1_000;

/** Replicas of one deployment: one in embedded mode, two sharing Redis and Postgres. */
interface Deployment {
  readonly name: string;
  start(): Promise<{ replicas: ProxyHarness[]; stop: () => Promise<void> }>;
}

const env = { RESERVATION_TTL_SECONDS: String(TTL_SECONDS) };

/** A harness on a clock the test moves, started at the wall clock's time (Redis expires counts by it). */
function harness(): ProxyHarness {
  const h = new ProxyHarness();
  h.now = Date.now();
  return h;
}

const DEPLOYMENTS: Deployment[] = [
  {
    name: 'embedded (in-process counters and reservations)',
    async start() {
      const h = await harness().start({ env });
      return { replicas: [h], stop: () => h.stop() };
    },
  },
  { name: 'two replicas on Redis and Postgres', start: () => redisReplicas() },
];

/** Two replicas on one Redis and one Postgres database of their own, `extra` added to (or over) their settings. */
async function redisReplicas(extra: Record<string, string> = {}) {
  const database: TestDatabase = await createTestDatabase({ migrated: true });
  const handle: DbHandle = await database.open();
  await migrate(handle);
  const shared = { ...env, REDIS_URL, REDIS_KEY_PREFIX: testKeyPrefix(), ...extra };
  const replicas = [
    await harness().start({ database: handle, env: shared }),
    await harness().start({ database: handle, env: shared }),
  ];
  return {
    replicas,
    async stop() {
      await Promise.all(replicas.map((h) => h.stop()));
      await handle.close();
      await database.drop();
    },
  };
}

describe.each(DEPLOYMENTS)('verify reserve and settle, $name', (deployment) => {
  let replicas: ProxyHarness[];
  let stop: () => Promise<void>;
  /** The replica reservations are made on, and the one they are settled on (the other one, when there are two). */
  let first: ProxyHarness;
  let other: ProxyHarness;

  beforeAll(async () => {
    ({ replicas, stop } = await deployment.start());
    first = replicas[0]!;
    other = replicas[replicas.length - 1]!;
  }, 60_000);
  afterAll(() => stop());

  /** Moves every replica's clock by `ms`. */
  const advance = (ms: number) => replicas.forEach((h) => (h.now += ms));

  async function verify(h: ProxyHarness, body: Record<string, unknown>) {
    const res = await h.admin('POST', '/tollgate/verify', body);
    expect(res.status).toBe(200);
    return res.body as {
      valid: boolean;
      cost?: number;
      reservationId?: string;
      limits: { remaining: number }[];
    };
  }

  const settle = (h: ProxyHarness, reservationId: string, units: number) =>
    h.admin('POST', '/tollgate/verify/settle', { reservationId, units });

  /**
   * The day limit has room for exactly `units` more: a request of that cost is admitted, and the next
   * one refused (on the other replica). Exact where `remaining` need not be: a replica may hold units
   * of a busy key's count leased ahead (docs/decisions/0006).
   */
  async function expectRoomFor(key: { secret: string }, units: number) {
    expect(await verify(first, { key: key.secret, cost: units })).toMatchObject({ valid: true });
    expect(await verify(other, { key: key.secret, cost: 1 })).toMatchObject({
      valid: false,
      code: 'rate_limit_exceeded',
    });
  }

  /** The key's usage of the day as every replica will show it: requests and cost, once stored. */
  async function usageOnceStored(keyId: string, expected: { requests: number; cost: number }) {
    for (const h of replicas) {
      await waitFor(
        () => h.usage(keyId).then(({ requests, cost }) => ({ requests, cost })),
        (seen) => seen.requests === expected.requests && seen.cost === expected.cost,
        { what: `usage of ${JSON.stringify(expected)}` },
      );
    }
  }

  it('a reservation settled on another replica charges exactly the units reported, and counts once at them', async () => {
    const key = await first.createKey({ limit: DAY_LIMIT, period: 'day' });
    const reserved = await verify(first, { key: key.secret, path: '/v1/chat', reserve: 100 });
    expect(reserved).toMatchObject({ valid: true, cost: 100, limits: [{ remaining: DAY_LIMIT - 100 }] });
    expect(reserved.reservationId).toMatch(/^rsv_/);

    const settled = await settle(other, reserved.reservationId!, 30);
    expect(settled).toEqual({
      status: 200,
      body: { reservationId: reserved.reservationId, units: 30, charged: -70 },
    });
    // A reservation above what was used, and one below: the limit holds exactly what was reported.
    const more = await verify(other, { key: key.secret, path: '/v1/chat', reserve: 10 });
    expect((await settle(first, more.reservationId!, 25)).body).toMatchObject({ units: 25, charged: 15 });
    const after = await verify(first, { key: key.secret, path: '/v1/chat', cost: 1 });
    expect(after.reservationId).toBeUndefined();
    await expectRoomFor(key, DAY_LIMIT - 30 - 25 - 1);

    await usageOnceStored(key.id, { requests: 5, cost: DAY_LIMIT });
  });

  it('a reservation settled twice at once is settled once: one 200, one 404', async () => {
    const key = await first.createKey({ limit: DAY_LIMIT, period: 'day' });
    const { reservationId } = await verify(first, { key: key.secret, reserve: 50 });
    const answers = await Promise.all([
      settle(first, reservationId!, 5),
      settle(other, reservationId!, 7),
      settle(other, reservationId!, 9),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 404, 404]);
    const won = answers.find((a) => a.status === 200)!.body as { units: number };
    for (const lost of answers.filter((a) => a.status === 404))
      expect(lost.body).toMatchObject({ code: 'reservation_not_found' });
    await expectRoomFor(key, DAY_LIMIT - won.units);
    await usageOnceStored(key.id, { requests: 3, cost: DAY_LIMIT });
  });

  it('a reservation past RESERVATION_TTL_SECONDS is 404 and keeps its reservation as its cost', async () => {
    const key = await first.createKey({ limit: DAY_LIMIT, period: 'day' });
    const { reservationId } = await verify(first, { key: key.secret, reserve: 40 });
    advance(TTL_SECONDS * 1_000);
    const late = await settle(other, reservationId!, 1);
    expect(late.status).toBe(404);
    expect(late.body).toMatchObject({ code: 'reservation_not_found' });
    // Neither settled nor refunded: the limit and the usage keep the 40 reserved.
    await expectRoomFor(key, DAY_LIMIT - 40);
    await usageOnceStored(key.id, { requests: 3, cost: DAY_LIMIT });
    // And it stays gone.
    expect((await settle(first, reservationId!, 1)).status).toBe(404);
  });

  it('a reservation nobody settles is taken out once its deadline passes and counted at its reservation', async () => {
    const key = await first.createKey({ limit: DAY_LIMIT, period: 'day' });
    await verify(first, { key: key.secret, reserve: 60 });
    const expiredBefore = await unsettledCount();
    advance(TTL_SECONDS * 1_000 + 1);
    // A replica's sweep takes it out (every 5 s of the wall clock): counted once, at its reservation.
    await usageOnceStored(key.id, { requests: 1, cost: 60 });
    expect((await unsettledCount()) - expiredBefore).toBe(1);
  }, 30_000);

  it('an unknown id, a malformed call and a cost beside a reservation are refused', async () => {
    expect((await settle(other, 'rsv_unknown', 1)).body).toMatchObject({ code: 'reservation_not_found' });
    expect((await settle(other, 'rsv_unknown', -1)).status).toBe(400);
    const key = await first.createKey({ limit: DAY_LIMIT, period: 'day' });
    const both = await first.admin('POST', '/tollgate/verify', { key: key.secret, reserve: 5, cost: 2 });
    expect(both.status).toBe(400);
    expect(both.body).toMatchObject({ code: 'validation_failed' });
  });

  /** Reservations counted as expired, over every replica. */
  async function unsettledCount(): Promise<number> {
    let total = 0;
    for (const h of replicas) {
      const line = (await h.metric('tollgate_unsettled_requests_total')).match(/reason="expired"} (\d+)/);
      total += line === null ? 0 : Number(line[1]);
    }
    return total;
  }
});

describe('two replicas on Redis: the replica that admitted a reservation is asked to settle it', () => {
  let replicas: ProxyHarness[];
  let stop: () => Promise<void>;

  beforeAll(async () => {
    ({ replicas, stop } = await redisReplicas({ EXTAUTH_PORT: '0', CONCURRENCY_LEASE_SECONDS: '600' }));
  }, 60_000);
  afterAll(() => stop());

  const settle = (h: ProxyHarness, reservationId: string, units: number) =>
    h.admin('POST', '/tollgate/verify/settle', { reservationId, units });

  it("a gateway's place held by one replica is given back by a settle call to the other", async () => {
    const [holder, other] = replicas as [ProxyHarness, ProxyHarness];
    const key = await holder.createKey({ algorithm: 'concurrency', limit: 1 });
    const ask = async () => {
      const res = await fetch(`http://127.0.0.1:${holder.extauthPort}/auth`, {
        headers: { 'x-api-key': key.secret },
      });
      return { status: res.status, reservation: res.headers.get('x-tollgate-reservation') };
    };
    const first = await ask();
    expect((await ask()).status).toBe(429);
    expect((await settle(other, first.reservation!, 0)).status).toBe(200);
    // Freed by the holder when the other replica's message reaches it, long before its 600 s lease.
    await waitFor(ask, (a) => a.status === 200, { timeoutMs: 5_000, what: 'the place given back' });
  });

  it('a reservation whose replica is gone is settled by the one asked, once', async () => {
    const [gone, other] = replicas as [ProxyHarness, ProxyHarness];
    const key = await gone.createKey({ limit: DAY_LIMIT, period: 'day' });
    const reserved = await gone.admin('POST', '/tollgate/verify', { key: key.secret, reserve: 100 });
    await gone.stop();
    const settled = await settle(other, reserved.body.reservationId as string, 40);
    expect(settled).toEqual({
      status: 200,
      body: { reservationId: reserved.body.reservationId, units: 40, charged: -60 },
    });
    const verify = (cost: number) => other.admin('POST', '/tollgate/verify', { key: key.secret, cost });
    expect((await verify(DAY_LIMIT - 40)).body).toMatchObject({ valid: true });
    expect((await verify(1)).body).toMatchObject({ valid: false, code: 'rate_limit_exceeded' });
  });
});

describe('a replica on a Redis that hangs', () => {
  let server: RedisServer;
  let h: ProxyHarness;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    server = await RedisServer.start();
    let replicas: ProxyHarness[];
    ({ replicas, stop } = await redisReplicas({ REDIS_URL: server.url }));
    h = replicas[0]!;
  }, 60_000);
  afterAll(async () => {
    server.resume();
    await stop();
    await server.stop();
  });

  it('answers a settle call 503 while Redis hangs, then settles it once, at its units, when Redis is back', async () => {
    const key = await h.createKey({ limit: DAY_LIMIT, period: 'day' });
    const reserved = await h.admin('POST', '/tollgate/verify', { key: key.secret, reserve: 100 });
    const reservationId = reserved.body.reservationId as string;
    server.pause();
    const started = Date.now();
    const refused = await h.admin('POST', '/tollgate/verify/settle', { reservationId, units: 30 });
    const waitedMs = Date.now() - started;
    server.resume();
    expect(refused).toMatchObject({ status: 503, body: { code: 'limit_unavailable' } });
    // Answered after Redis's command timeout, not after the minute a settlement is tried for.
    expect(waitedMs).toBeLessThan(10_000);
    // Redis took it from the hung call, whose answer was lost: that call's replica settles it, and a
    // call sent again finds it settled.
    const again = await h.admin('POST', '/tollgate/verify/settle', { reservationId, units: 50 });
    expect(again).toMatchObject({ status: 404, body: { code: 'reservation_not_found' } });
    await waitFor(
      () => h.usage(key.id).then(({ requests, cost }) => ({ requests, cost })),
      (seen) => seen.requests === 1 && seen.cost === 30,
      { what: 'the request counted once, at the 30 units of the hung call' },
    );
    const verify = (cost: number) => h.admin('POST', '/tollgate/verify', { key: key.secret, cost });
    expect((await verify(DAY_LIMIT - 30)).body).toMatchObject({ valid: true });
    expect((await verify(1)).body).toMatchObject({ valid: false, code: 'rate_limit_exceeded' });
  });

  it('counts a proxied request written down in flight once, at what it reported, when Redis hung as it ended', async () => {
    // Answers 70 tokens once the test lets it.
    let answer: (() => void) | undefined;
    const holding = await ModelBackend.start((_request, _json, response) => {
      answer = () => sendJson(response, { usage: { total_tokens: 70 } });
    });
    const route = { routeId: 'held-on-hang', match: { pathPrefix: '/v1/held' }, upstreamUrl: holding.url };
    expect((await h.admin('POST', '/tollgate/routes', route)).status).toBe(201);
    try {
      const plan = await h.admin('POST', '/rate-limit/create', {
        rateLimitId: 'tokens-on-hang',
        limits: [{ name: 'tokens', limit: DAY_LIMIT, period: 'day' }],
        costs: [{ match: { routeIds: ['held-on-hang'] }, cost: 100, settle: { preset: 'openai' } }],
      });
      expect(plan.status).toBe(201);
      const key = (
        await h.admin('POST', '/consumer-api-key/create', { name: 'held', rateLimitId: 'tokens-on-hang' })
      ).body as { id: string; secret: string };
      const answered = fetch(`${h.base}/v1/held`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        body: '{}',
      });
      const written = () => h.metric('tollgate_requests_in_flight_written');
      await waitFor(written, (line) => line.endsWith(' 1'), { what: 'the request written down' });
      // Written down while it is forwarded: the backend may not hold it yet.
      await waitFor(
        async () => answer !== undefined,
        (held) => held,
        { what: 'the backend holding the request' },
      );
      // The request ends while Redis hangs: the take of its record is sent again until Redis answers,
      // and only then is the request settled and counted.
      server.pause();
      answer!();
      expect((await (await answered).json()) as unknown).toEqual({ usage: { total_tokens: 70 } });
      await waitFor(written, (line) => line.endsWith(' 0'), {
        what: 'the request ended, its record to be taken back',
      });
      server.resume();
      await waitFor(
        () => h.usage(key.id).then(({ requests, cost }) => ({ requests, cost })),
        (seen) => seen.requests === 1 && seen.cost === 70,
        { what: 'the request counted once, at the 70 units it reported' },
      );
      expect((await h.admin('GET', `/consumer-api-key/${key.id}`)).body.usage.unsettled).toBe(0);
      const verify = (cost: number) => h.admin('POST', '/tollgate/verify', { key: key.secret, cost });
      expect((await verify(DAY_LIMIT - 70)).body).toMatchObject({ valid: true });
      expect((await verify(1)).body).toMatchObject({ valid: false, code: 'rate_limit_exceeded' });
    } finally {
      server.resume();
      await holding.close();
    }
  });
});
