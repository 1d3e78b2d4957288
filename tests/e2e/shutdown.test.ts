/**
 * SIGTERM as docs/guides/operations.md orders it: not ready, no new connections, in-flight requests finish, usage
 * flushed, exit 0; under load, in both modes, every request a consumer's keys were answered is counted
 * once, for each key and for the consumer.
 */
import { randomBytes } from 'node:crypto';
import { Agent, get } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer } from '../helpers/redis-server.js';
import { createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { startBackend, type Backend } from './helpers/backend.js';
import { MODES, type Deployment } from './helpers/modes.js';
import { consumerWithKeys, sleep, usageOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

let backend: Backend;
let tollgate: Tollgate;
const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'tollgate-drain-')), SHUTDOWN_TIMEOUT_MS: '5000' };

beforeAll(async () => {
  backend = await startBackend();
  tollgate = await startTollgate({ ...env, UPSTREAM_URL: backend.url });
});

afterAll(async () => {
  await tollgate?.stop();
  await backend?.close();
});

it('drains: readiness turns 503, a request in flight finishes, new connections are refused, usage survives, exit 0', async () => {
  const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'drain' });
  const auth = { authorization: `Bearer ${key.secret}` };

  const inFlight = fetch(`${tollgate.url}/slow/1500`, { headers: auth });
  await new Promise((r) => setTimeout(r, 300));
  const exited = new Promise<number | null>((resolve) => tollgate.process.once('exit', resolve));
  tollgate.process.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));

  expect((await fetch(`${tollgate.opsUrl}/readyz`)).status).toBe(503);
  await expect(fetch(`${tollgate.url}/v1/after`, { headers: auth })).rejects.toThrow();
  const slow = await inFlight;
  expect(slow.status).toBe(200);
  expect(await slow.json()).toMatchObject({ url: '/slow/1500' });
  expect(await exited).toBe(0);

  // The drained request was recorded and flushed before exit: the next process on the data shows it.
  tollgate = await startTollgate({ ...env, UPSTREAM_URL: backend.url, ROOT_TOKEN: tollgate.rootToken });
  const detail = await tollgate.admin('GET', `/consumer-api-key/${key.id}`);
  expect(detail.body.usage).toMatchObject({ totalRequests: 1, successfulRequests: 1 });
  expect(detail.body.usage.endpoints).toEqual([
    expect.objectContaining({ endpoint: '/slow/1500', requests: 1 }),
  ]);
});

/**
 * A proxied request, on a connection of its own (`agent` false) or on one of the agent's kept-alive
 * ones: its status and its Connection header, or status 0 when the connection was refused or broke.
 */
const proxied = (
  t: Tollgate,
  secret: string,
  agent: Agent | false = false,
  path = '/v1/drained',
): Promise<{ status: number; connection: string | undefined }> =>
  new Promise((resolve) => {
    const broke = () => resolve({ status: 0, connection: undefined });
    const req = get(`${t.url}${path}`, { agent, headers: { authorization: `Bearer ${secret}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
      res.on('error', broke);
    });
    req.on('error', broke);
  });

const requestAlone = async (t: Tollgate, secret: string): Promise<number> =>
  (await proxied(t, secret)).status;

it('ends keep-alive connections busy with requests at SIGTERM by answering Connection: close, long before the drain deadline', async () => {
  const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'kept alive' });
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  let exited = false;
  const closing: string[] = [];
  const answered = [0, 0, 0, 0];
  // Four clients that each send their next request on the same connection as soon as the last is
  // answered; the backend takes 200 ms, so each connection has a request in flight at SIGTERM (an idle
  // one the server just closes, however slow the clients are on a loaded machine).
  const loops = answered.map(async (_, client) => {
    while (!exited) {
      const { status, connection } = await proxied(tollgate, key.secret, agent, '/v1/slow/200');
      if (status === 0) await sleep(10);
      else answered[client]!++;
      if (connection === 'close') closing.push(connection);
    }
  });
  // Every client has had an answer, so each is on its own connection's next request, not still
  // connecting (on a loaded machine, a fixed wait saw none connected and nothing to close).
  while (answered.some((n) => n === 0)) await sleep(20);
  const started = performance.now();
  const exit = new Promise<number | null>((resolve) => tollgate.process.once('exit', resolve));
  tollgate.process.kill('SIGTERM');
  expect(await exit).toBe(0);
  const seconds = (performance.now() - started) / 1000;
  exited = true;
  await Promise.all(loops);
  agent.destroy();
  console.log(
    `SIGTERM with 4 busy keep-alive connections: exited after ${seconds.toFixed(1)} s (drain deadline 5 s)`,
  );
  // Each connection was told to close with its next answer, so the drain did not wait for the deadline.
  expect(closing.length).toBeGreaterThan(0);
  expect(seconds).toBeLessThan(4);
  tollgate = await startTollgate({ ...env, UPSTREAM_URL: backend.url, ROOT_TOKEN: tollgate.rootToken });
});

it('closes a kept-alive connection once the request in flight on it at SIGTERM is answered, when its client sends no other', async () => {
  const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'gone elsewhere' });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  // A client that sends on a kept-alive connection once before, so its next request reuses it.
  expect((await proxied(tollgate, key.secret, agent)).status).toBe(200);
  const sockets = Object.values(agent.freeSockets).flat();
  expect(sockets).toHaveLength(1);
  const socketClosed = new Promise((resolve) => sockets[0]!.once('close', resolve));
  const path = `/v1/in-flight/${randomBytes(4).toString('hex')}/slow/600`;
  const inFlight = proxied(tollgate, key.secret, agent, path);
  // The request is in flight, past the listener's 'request' event, once the backend has it.
  await waitFor(
    async () => backend.received.some((r) => r.url === path),
    (arrived) => arrived,
  );
  const started = performance.now();
  const exit = new Promise<number | null>((resolve) => tollgate.process.once('exit', resolve));
  tollgate.process.kill('SIGTERM');
  // Answered as it would have been, kept alive: the client, like a load balancer that moved on,
  // sends nothing more on it.
  expect(await inFlight).toEqual({ status: 200, connection: 'keep-alive' });
  await socketClosed;
  const closedAfter = (performance.now() - started) / 1000;
  expect(await exit).toBe(0);
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  console.log(
    `SIGTERM with a request in flight on a kept-alive connection: closed by the server ${closedAfter.toFixed(1)} s ` +
      `after, exited ${seconds.toFixed(1)} s after (drain deadline 5 s)`,
  );
  expect(seconds).toBeLessThan(4);
  tollgate = await startTollgate({ ...env, UPSTREAM_URL: backend.url, ROOT_TOKEN: tollgate.rootToken });
});

describe.each(MODES)('SIGTERM under load, $name', (mode) => {
  let deployment: Deployment;
  let running: Tollgate | undefined;

  beforeAll(async () => {
    deployment = await mode.deploy();
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    await deployment?.dispose();
  });

  it("counts once every request a consumer's keys were answered, before and during the drain", async () => {
    const settings = { ...deployment.env, UPSTREAM_URL: backend.url, SHUTDOWN_TIMEOUT_MS: '5000' };
    const first = await startTollgate(settings);
    running = first;
    const account = await consumerWithKeys(first, 'drained', {
      keys: 3,
      limit: 10_000_000,
      keyLimit: 10_000_000,
    });
    const answered = account.keys.map(() => 0);
    let exited = false;
    // Each client goes round the keys until the process has exited; a refused connection answers nothing.
    const loops = Array.from({ length: 6 }, async (_, n) => {
      for (let i = n; !exited; i++) {
        const k = i % account.keys.length;
        if ((await requestAlone(first, account.keys[k]!.secret)) === 200) answered[k]!++;
        else await sleep(10);
      }
    });
    await sleep(1_500);
    const exit = new Promise<number | null>((resolve) => first.process.once('exit', resolve));
    first.process.kill('SIGTERM');
    expect(await exit).toBe(0);
    exited = true;
    await Promise.all(loops);
    const all = answered.reduce((a, b) => a + b, 0);
    expect(answered.every((n) => n > 0)).toBe(true);

    // The next process on the same storage shows each of them once: nothing lost, nothing twice.
    running = await startTollgate({ ...settings, ROOT_TOKEN: first.rootToken });
    const consumerPath = `/tollgate/consumers/${account.consumerId}`;
    const { value: shown } = await waitFor(
      () => usageOn(running!, consumerPath),
      (u) => u?.total === all,
      { timeoutMs: 5_000, everyMs: 200 },
    );
    console.log(
      `SIGTERM under load, ${mode.name}: ${all} answered (keys ${answered.join(' + ')}), the consumer shows ${shown?.total}`,
    );
    expect(shown).toEqual({ total: all, successful: all });
    for (const [k, key] of account.keys.entries())
      expect(await usageOn(running, `/consumer-api-key/${key.id}`)).toEqual({
        total: answered[k],
        successful: answered[k],
      });
    const overTime = await running.admin('GET', `${consumerPath}/usage?granularity=hour`);
    expect(overTime.body.buckets.reduce((n: number, b: { requests: number }) => n + b.requests, 0)).toBe(all);
  }, 60_000);
});

it('never writes a secret to its logs', () => expectNoSecretsLogged());

describe('SIGTERM while Redis hangs (private redis-server, SIGSTOP)', () => {
  let redis: RedisServer;
  let database: TestDatabase;
  let hung: Tollgate;

  beforeAll(async () => {
    [redis, database] = await Promise.all([RedisServer.start(), createTestDatabase()]);
    hung = await startTollgate({
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: testKeyPrefix(),
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      UPSTREAM_URL: backend.url,
      SHUTDOWN_TIMEOUT_MS: '3000',
    });
  }, 60_000);

  afterAll(async () => {
    redis?.resume();
    hung?.process.kill('SIGKILL');
    await redis?.destroy();
    await database?.drop();
  });

  it('exits within SHUTDOWN_TIMEOUT_MS + 5 s, and says how many requests of usage it could not keep', async () => {
    const { body: key } = await hung.admin('POST', '/consumer-api-key/create', { name: 'hung-redis' });
    const auth = { authorization: `Bearer ${key.secret}` };
    for (let i = 0; i < 3; i++)
      expect((await fetch(`${hung.url}/v1/before`, { headers: auth })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500)); // pushed to Redis

    redis.pause();
    const during = 5;
    for (let i = 0; i < during; i++)
      expect((await fetch(`${hung.url}/v1/during`, { headers: auth })).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => hung.process.once('exit', resolve));
    const started = performance.now();
    hung.process.kill('SIGTERM');
    await exited;
    const seconds = (performance.now() - started) / 1000;
    console.log(`SIGTERM with Redis paused, SHUTDOWN_TIMEOUT_MS=3000: exited after ${seconds.toFixed(1)} s`);
    expect(seconds).toBeLessThan(3 + 5);
    const dropped = hung.output
      .map((l) => (l.startsWith('{') ? JSON.parse(l) : {}))
      .find((l) => l.msg === 'usage could not be written before exit and is dropped');
    expect(dropped).toMatchObject({ level: 50, requests: during });
    // Every step finished within its share: the process ended on its own, not on the last-word timer.
    expect(hung.output.some((l) => l.includes('shutdown did not finish in time'))).toBe(false);
  }, 60_000);
});
