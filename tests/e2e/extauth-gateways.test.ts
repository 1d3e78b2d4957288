/**
 * Debian's nginx and Caddy, run with the configurations of docs/guides/external-authorization.md as
 * written (only their ports changed), in front of a real backend, with the built Tollgate behind
 * their authorization call (EXTAUTH_PORT): the client gets the backend's 200 (the backend receiving
 * the key in x-api-key), 401, 403 and 429 with Retry-After, and exactly `limit` requests reach the
 * backend in each window; nginx passes a decision's x-tollgate-reservation to the backend, whose
 * settle call frees the key's concurrency place. A client's own X-Forwarded-Uri, X-Forwarded-Method or
 * X-Consumer-Id never decides nor reaches the backend.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { caddyFromGuide, nginxFromGuide, type GatewayPorts } from '../helpers/gateway-configs.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { startEmbedded, waitFor, type Fleet } from './helpers/replicas.js';

function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

const accepts = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });

interface Gateway {
  readonly process: ChildProcess;
  readonly port: number;
  readonly output: string[];
  readonly dir: string;
}

const GATEWAYS: Record<string, (dir: string, ports: GatewayPorts) => string[]> = {
  nginx: nginxFromGuide,
  caddy: caddyFromGuide,
};

async function startGateway(name: string, tollgate: string, backend: string): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-${name}-`));
  const port = await freePort();
  const [command, ...args] = GATEWAYS[name]!(dir, {
    port,
    tollgate: tollgate.replace('http://', ''),
    backend: backend.replace('http://', ''),
  });
  const output: string[] = [];
  const child = spawn(command!, args, {
    env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  await waitFor(
    async () => child.exitCode === null && (await accepts(port)),
    (up) => up,
    { timeoutMs: 20_000, what: `${name} listening: ${output.join('')}` },
  );
  return { process: child, port, output, dir };
}

const clock = new TestClock();
let fleet: Fleet;
let tollgateUrl: string;

beforeAll(async () => {
  fleet = await startEmbedded({ EXTAUTH_PORT: '0', ...clock.env });
  tollgateUrl = fleet.members[0]!.extauthUrl!;
}, 120_000);
afterAll(() => fleet?.stop());

describe.each(Object.keys(GATEWAYS))('%s from the guide', (name) => {
  let gateway: Gateway;

  beforeAll(async () => {
    gateway = await startGateway(name, tollgateUrl, fleet.backend.url);
  }, 30_000);
  afterAll(() => {
    gateway?.process.kill('SIGTERM');
    if (gateway !== undefined) rmSync(gateway.dir, { recursive: true, force: true });
  });

  const send = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${gateway.port}${path}`, { headers });
    return { status: res.status, headers: Object.fromEntries(res.headers), text: await res.text() };
  };
  const newKey = async (settings: Record<string, unknown>) => {
    const tollgate = fleet.members[0]!;
    const { status, body } = await tollgate.admin('POST', '/consumer-api-key/create', {
      name: `${name} client`,
      ...settings,
    });
    expect(status).toBe(201);
    return body as { id: string; secret: string };
  };
  const reachedBackend = (path: string) => fleet.backend.received.filter((r) => r.url === path);

  it("passes an admitted request to the backend with the key in x-api-key, the client's Authorization dropped", async () => {
    const key = await newKey({});
    const answer = await send(`/${name}/admitted?x=1`, { authorization: `Bearer ${key.secret}` });
    expect([answer.status, answer.headers['x-backend']]).toEqual([200, 'yes']);
    const [received] = reachedBackend(`/${name}/admitted?x=1`);
    expect(received?.headers['x-api-key']).toBe(key.secret);
    expect(received?.headers['x-consumer-api-key-id']).toBe(key.id);
    expect(received?.headers.authorization).toBeUndefined();
  });

  it("decides on the client's own path and method, never on an X-Forwarded-Uri or X-Forwarded-Method it sent: a key allowed on one route gets 403 route_not_allowed elsewhere, and the backend is never reached", async () => {
    const tollgate = fleet.members[0]!;
    const routeId = `${name}-public`;
    const route = await tollgate.admin('POST', '/tollgate/routes', {
      routeId,
      match: { pathPrefix: `/${name}/public`, methods: ['GET'] },
      upstreamUrl: fleet.backend.url,
    });
    expect(route.status).toBe(201);
    const key = await newKey({ allowedRouteIds: [routeId] });
    // The route in force (within a second): the key's own route is admitted.
    await waitFor(
      () => send(`/${name}/public/x`, { 'x-api-key': key.secret }),
      (a) => a.status === 200,
      { timeoutMs: 5_000, what: 'the route in force' },
    );
    const spoof = { 'x-forwarded-uri': `/${name}/public/x`, 'x-forwarded-method': 'GET' };
    const otherPath = await send(`/${name}/admin/secrets`, { 'x-api-key': key.secret, ...spoof });
    const otherMethod = await fetch(`http://127.0.0.1:${gateway.port}/${name}/public/x`, {
      method: 'DELETE',
      headers: { 'x-api-key': key.secret, ...spoof },
    });
    expect([otherPath.status, otherMethod.status]).toEqual([403, 403]);
    expect(reachedBackend(`/${name}/admin/secrets`)).toEqual([]);
    expect(reachedBackend(`/${name}/public/x`).map((r) => r.method)).toEqual(['GET']);
    const failures = await waitFor(
      () => tollgate.admin('GET', `/consumer-api-key/${key.id}/failures`),
      (page) => page.body.failures?.length === 2,
      { timeoutMs: 10_000, what: 'both refusals in the failure log' },
    );
    const logged = failures.value.body.failures as { method: string; path: string; code: string }[];
    expect(logged.map((f) => [f.method, f.path, f.code]).sort()).toEqual([
      ['DELETE', `/${name}/public/x`, 'route_not_allowed'],
      ['GET', `/${name}/admin/secrets`, 'route_not_allowed'],
    ]);
  });

  it("passes the key's consumer to the backend in X-Consumer-Id, none for a key without one, and never a client's own", async () => {
    const tollgate = fleet.members[0]!;
    const consumer = await tollgate.admin('POST', '/tollgate/consumers', { name: `${name} account` });
    expect(consumer.status).toBe(201);
    const { consumerId } = consumer.body as { consumerId: string };
    const withConsumer = await newKey({ consumerId });
    const without = await newKey({});
    const claim = { 'x-consumer-id': 'someone-else' };
    const path = `/${name}/consumer`;
    for (const headers of [
      { 'x-api-key': without.secret },
      { 'x-api-key': without.secret, ...claim },
      { 'x-api-key': withConsumer.secret, ...claim },
    ])
      expect((await send(path, headers)).status).toBe(200);
    expect(reachedBackend(path).map((r) => r.headers['x-consumer-id'])).toEqual([
      undefined,
      undefined,
      consumerId,
    ]);
  });

  it('answers 401 with WWW-Authenticate without a key or with a wrong one, and 403 for an origin the key does not allow; none reaches the backend', async () => {
    const missing = await send(`/${name}/refused`);
    const wrong = await send(`/${name}/refused`, { 'x-api-key': 'tg_not-a-key' });
    const key = await newKey({ allowedOrigins: ['https://app.example.com'] });
    const foreign = await send(`/${name}/refused`, {
      'x-api-key': key.secret,
      origin: 'https://elsewhere.example.com',
    });
    expect([missing.status, missing.headers['www-authenticate']]).toEqual([401, 'Bearer']);
    expect(wrong.status).toBe(401);
    expect(foreign.status).toBe(403);
    expect(reachedBackend(`/${name}/refused`)).toEqual([]);
  });

  // nginx's only: Caddy's configuration copies only headers every admitted answer has (see the guide),
  // so its backend gets no reservation to settle.
  if (name === 'nginx')
    it("passes x-tollgate-reservation to the backend, whose settle call gives the key's concurrency place back at once", async () => {
      const rateLimitId = `${name}-one-in-flight`;
      const plan = await fleet.members[0]!.admin('POST', '/rate-limit/create', {
        rateLimitId,
        limits: [{ algorithm: 'concurrency', limit: 1 }],
      });
      expect(plan.status).toBe(201);
      const key = await newKey({ rateLimitId });
      const path = `/${name}/in-flight`;
      expect((await send(path, { 'x-api-key': key.secret })).status).toBe(200);
      // The gateway's request ended, but only the settle call tells Tollgate (its lease is 30 s).
      expect((await send(path, { 'x-api-key': key.secret })).status).toBe(429);
      const reservation = reachedBackend(path)[0]!.headers['x-tollgate-reservation'] as string;
      expect(reservation).toMatch(/^rsv_/);
      const settled = await fleet.members[0]!.admin('POST', '/tollgate/verify/settle', {
        reservationId: reservation,
        units: 0,
      });
      expect(settled.status).toBe(200);
      await waitFor(
        () => send(path, { 'x-api-key': key.secret }),
        (a) => a.status === 200,
        { timeoutMs: 5_000, what: 'the place given back' },
      );
    });

  it('lets exactly `limit` requests reach the backend in each window and answers the rest 429 with Retry-After', async () => {
    const rateLimitId = `${name}-three-a-minute`;
    const plan = await fleet.members[0]!.admin('POST', '/rate-limit/create', {
      rateLimitId,
      limit: 3,
      period: 'minute',
    });
    expect(plan.status).toBe(201);
    const key = await newKey({ rateLimitId });
    const path = `/${name}/limited`;
    for (const window of [1, 2]) {
      // Each burst well inside one minute of Tollgate's clock.
      clock.after(MINUTE_MS, 100);
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await send(path, { 'x-api-key': key.secret }));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429]);
      const refused = answers[4]!;
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers.ratelimit).toMatch(/^"minute";r=0;t=\d+$/);
      expect(reachedBackend(path)).toHaveLength(3 * window);
    }
  });
});
