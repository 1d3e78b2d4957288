/**
 * A gateway's decision that holds a concurrency place or reserves units answers `x-tollgate-reservation`
 * (forward auth's header for the backend, Check's `ok_response`), and `POST /tollgate/verify/settle`
 * with it gives the place back at once and charges the units reported, once
 * (docs/guides/external-authorization.md#settling). In both modes, with a place lease far longer than
 * the test: a place that comes back came back by the settle call.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { EnvoyClient, type Message } from '../helpers/envoy-client.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

describe.each(HARNESS_MODES)('settling a gateway decision, $name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;
  let envoy: EnvoyClient;

  beforeAll(async () => {
    // Redis keeps its windows until they end by the real clock: the harness's clock is the real one.
    h.realTime = true;
    stop = await mode.start(h, {
      env: { EXTAUTH_PORT: '0', EXTAUTH_GRPC_PORT: '0', CONCURRENCY_LEASE_SECONDS: '600' },
    });
    envoy = new EnvoyClient(`127.0.0.1:${h.extauthGrpcPort}`);
  }, 60_000);
  afterAll(async () => {
    envoy?.close();
    await stop?.();
  });

  /** nginx's `auth_request` for a client's `GET /orders` with `secret`. */
  const ask = async (secret: string) => {
    const res = await fetch(`http://127.0.0.1:${h.extauthPort}/auth`, {
      headers: { 'x-api-key': secret, 'x-original-method': 'GET', 'x-original-uri': '/orders' },
    });
    await res.arrayBuffer();
    return { status: res.status, reservation: res.headers.get('x-tollgate-reservation') };
  };
  const settle = (reservationId: string, units: number) =>
    h.admin('POST', '/tollgate/verify/settle', { reservationId, units });

  /** A key on a plan of `limits`, each request's cost `costs` says. */
  async function keyOn(limits: unknown[], costs: unknown[] = []): Promise<{ id: string; secret: string }> {
    const plan = await h.admin('POST', '/rate-limit/create', {
      rateLimitId: `p-${randomBytes(4).toString('hex')}`,
      limits,
      costs,
    });
    expect(plan).toMatchObject({ status: 201 });
    const key = await h.admin('POST', '/consumer-api-key/create', {
      name: 'gateway',
      rateLimitId: plan.body.rateLimitId,
    });
    expect(key.status).toBe(201);
    return key.body;
  }

  it('forward auth: settling x-tollgate-reservation gives the concurrency place back at once, once', async () => {
    const key = await keyOn([{ algorithm: 'concurrency', limit: 1 }]);
    const first = await ask(key.secret);
    expect(first.status).toBe(200);
    expect(first.reservation).toMatch(/^rsv_/);
    expect((await ask(key.secret)).status).toBe(429);

    // A place alone: units are ignored, nothing is charged.
    expect(await settle(first.reservation!, 99)).toEqual({
      status: 200,
      body: { reservationId: first.reservation, units: 1, charged: 0 },
    });
    // Given back by the call, not the lease (600 s): Redis may see the release a round trip later (a
    // script's first call on a connection), so the place is waited for, briefly.
    const { value: next } = await waitFor(
      () => ask(key.secret),
      (a) => a.status === 200,
      { timeoutMs: 5_000, what: 'the place given back' },
    );
    expect(next.reservation).toMatch(/^rsv_/);
    expect((await settle(first.reservation!, 0)).body).toMatchObject({ code: 'reservation_not_found' });
    // Settling again never frees the next request's place.
    expect((await ask(key.secret)).status).toBe(429);
    expect((await settle(next.reservation!, 0)).status).toBe(200);
  });

  it('Check: the ok_response names the reservation, and settling it frees the place', async () => {
    const key = await keyOn([{ algorithm: 'concurrency', limit: 1 }]);
    const check = (): Promise<Message> => envoy.check('/orders', { 'x-api-key': key.secret });
    const first = await check();
    const header = (first.ok_response.headers as Message[]).find(
      (h: Message) => h.header.key === 'x-tollgate-reservation',
    );
    expect(header?.header.value).toMatch(/^rsv_/);
    expect((await check()).denied_response.status.code).toBe('TooManyRequests');
    expect((await settle(header.header.value, 0)).status).toBe(200);
    await waitFor(check, (c: Message) => c.ok_response !== null && c.ok_response !== undefined, {
      timeoutMs: 5_000,
      what: 'the place given back',
    });
  });

  it('a usage-priced decision reserves its cost and is settled at the units the backend reports: charged exactly, counted once', async () => {
    const key = await keyOn(
      [{ name: 'tokens', limit: 1_000, period: 'day' }],
      [{ match: { pathPrefix: '/' }, cost: 100, settle: { header: 'x-units' } }],
    );
    const reserved = await ask(key.secret);
    expect(reserved.status).toBe(200);
    expect((await settle(reserved.reservation!, 30)).body).toEqual({
      reservationId: reserved.reservation,
      units: 30,
      charged: -70,
    });
    // Exactly 970 left: a verify of that cost is admitted, the next refused.
    const verify = (cost: number) =>
      h.admin('POST', '/tollgate/verify', { key: key.secret, path: '/orders', cost });
    expect((await verify(970)).body).toMatchObject({ valid: true });
    expect((await verify(1)).body).toMatchObject({ valid: false, code: 'rate_limit_exceeded' });
    await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 3 && u.cost === 30 + 970,
      { what: 'the settled decision counted once at 30, the verify at 970' },
    );
  });
});
