/**
 * One key decided at once through the proxy, forward auth (EXTAUTH_PORT), Envoy's Check and its
 * ShouldRateLimit (EXTAUTH_GRPC_PORT), spread over 3 built replicas on Redis and Postgres, and on one
 * embedded Tollgate: exactly `limit` decisions are admitted in the window, whichever listener and
 * replica made them, only the proxy's admitted requests reach the backend, and usage counts every
 * decision once; and a per-model limit by the body holds exactly, whether the proxy reads the body,
 * Envoy's Check carries it or verify is given it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EnvoyClient, rateLimitRequest } from '../helpers/envoy-client.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { startEmbedded, startFleet, waitFor, type Fleet } from './helpers/replicas.js';

const LIMIT = 40;
const PER_FRONT = 20;
const FRONTS = ['proxy', 'forward auth', 'Check', 'ShouldRateLimit'] as const;
const ENV = { EXTAUTH_PORT: '0', EXTAUTH_GRPC_PORT: '0' };

describe.each([
  ['3 replicas on Redis and Postgres', (env: Record<string, string>) => startFleet(3, env)],
  ['embedded', (env: Record<string, string>) => startEmbedded(env)],
])('%s', (_name, start) => {
  const clock = new TestClock();
  let fleet: Fleet;
  let clients: EnvoyClient[];

  beforeAll(async () => {
    fleet = await start({ ...ENV, ...clock.env });
    clients = fleet.members.map((t) => new EnvoyClient(t.extauthGrpcAddress!));
  }, 180_000);
  afterAll(async () => {
    for (const client of clients ?? []) client.close();
    await fleet?.stop();
  });

  it(`admits exactly ${LIMIT} of ${PER_FRONT * FRONTS.length} decisions of one key across every listener, each counted once`, async () => {
    const members = fleet.members;
    const admin = members[0]!;
    const plan = await admin.admin('POST', '/rate-limit/create', {
      rateLimitId: 'forty-a-minute',
      limit: LIMIT,
      period: 'minute',
    });
    expect(plan.status).toBe(201);
    const key = (
      await admin.admin('POST', '/consumer-api-key/create', {
        name: 'everywhere',
        rateLimitId: 'forty-a-minute',
      })
    ).body as { id: string; secret: string };

    // The whole burst inside one minute of the deployment's clock.
    clock.after(MINUTE_MS, 100);
    const auth = { 'x-api-key': key.secret };
    const decide: Record<(typeof FRONTS)[number], (i: number) => Promise<boolean>> = {
      proxy: async (i) => {
        const res = await fetch(`${members[i % members.length]!.url}/everywhere/proxy`, { headers: auth });
        await res.arrayBuffer();
        return res.status === 200;
      },
      'forward auth': async (i) => {
        const res = await fetch(`${members[i % members.length]!.extauthUrl}/auth`, {
          headers: { ...auth, 'x-forwarded-uri': '/everywhere/forward-auth' },
        });
        await res.arrayBuffer();
        return res.status === 200;
      },
      Check: async (i) =>
        ((await clients[i % clients.length]!.check('/everywhere/check', auth)).status.code ?? 0) === 0,
      ShouldRateLimit: async (i) =>
        (
          await clients[i % clients.length]!.shouldRateLimit(
            rateLimitRequest('tollgate', [[['api_key', key.secret]], [['path', '/everywhere/rls']]]),
          )
        ).overall_code === 'OK',
    };
    const outcomes = await Promise.all(
      Array.from({ length: PER_FRONT }, (_, i) => FRONTS.map((front) => decide[front](i))).flat(),
    );
    expect(outcomes.filter(Boolean)).toHaveLength(LIMIT);
    const proxied = outcomes.filter((admitted, i) => admitted && i % FRONTS.length === 0).length;
    expect(fleet.backend.received.filter((r) => r.url === '/everywhere/proxy')).toHaveLength(proxied);

    // Usage, read through any replica, counts every decision once: admitted ones successful.
    const usage = await waitFor(
      async () => {
        const day = new Date(clock.now()).toISOString().slice(0, 10);
        const read = await members[members.length - 1]!.admin(
          'GET',
          `/consumer-api-key/${key.id}/usage?granularity=day&from=${day}T00:00:00Z&to=${day}T23:59:59Z`,
        );
        return read.body.buckets[0] ?? { requests: 0 };
      },
      (bucket) => bucket.requests >= PER_FRONT * FRONTS.length,
      { timeoutMs: 20_000 },
    );
    expect([usage.value.requests, usage.value.successful]).toEqual([PER_FRONT * FRONTS.length, LIMIT]);
  });

  it(`limits gpt-4o by the body to exactly ${LIMIT} across replicas, read by the proxy, sent along by Envoy and given to verify`, async () => {
    const members = fleet.members;
    const admin = members[0]!;
    expect(
      (
        await admin.admin('POST', '/rate-limit/create', {
          rateLimitId: 'forty-gpt-4o-a-minute',
          limits: [
            {
              name: 'gpt-4o',
              limit: LIMIT,
              period: 'minute',
              match: { body: { pointer: '/model', values: ['gpt-4o'] } },
            },
          ],
        })
      ).status,
    ).toBe(201);
    const key = (
      await admin.admin('POST', '/consumer-api-key/create', {
        name: 'per-model',
        rateLimitId: 'forty-gpt-4o-a-minute',
      })
    ).body as { id: string; secret: string };

    clock.after(MINUTE_MS, 100);
    const body = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });
    const decide: Record<'proxy' | 'Check' | 'verify', (i: number, model: string) => Promise<boolean>> = {
      proxy: async (i, model) => {
        const res = await fetch(`${members[i % members.length]!.url}/everywhere/chat`, {
          method: 'POST',
          headers: { 'x-api-key': key.secret, 'content-type': 'application/json' },
          body: JSON.stringify(body(model)),
        });
        await res.arrayBuffer();
        return res.status === 200;
      },
      Check: async (i, model) =>
        ((
          await clients[i % clients.length]!.check(
            '/everywhere/chat',
            { 'x-api-key': key.secret, ':method': 'POST' },
            { method: 'POST', raw_body: Buffer.from(JSON.stringify(body(model))) },
          )
        ).status.code ?? 0) === 0,
      verify: async (i, model) =>
        (
          await members[i % members.length]!.admin('POST', '/tollgate/verify', {
            key: key.secret,
            method: 'POST',
            path: '/everywhere/chat',
            body: body(model),
          })
        ).body.valid === true,
    };
    const fronts = Object.keys(decide) as (keyof typeof decide)[];
    const outcomes = await Promise.all(
      Array.from({ length: PER_FRONT }, (_, i) =>
        fronts.flatMap((front) => [decide[front](i, 'gpt-4o'), decide[front](i, 'gpt-4o-mini')]),
      ).flat(),
    );
    // Every gpt-4o-mini decision passes; of the gpt-4o ones, exactly the limit, whichever way the body came.
    const admitted = (parity: number) => outcomes.filter((ok, i) => ok && i % 2 === parity).length;
    expect(admitted(1)).toBe(PER_FRONT * fronts.length);
    expect(admitted(0)).toBe(LIMIT);
  });

  it("stops on SIGTERM while Envoy's connections are still open, each replica exiting 0", async () => {
    const codes = await Promise.all(fleet.members.map((t) => t.stop()));
    expect(codes).toEqual(fleet.members.map(() => 0));
  });
});
