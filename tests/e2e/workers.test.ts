/**
 * WORKERS=N: one built server runs N node:cluster workers sharing its ports. In Redis mode they count
 * as one; in embedded mode (in-process counters) start-up refuses with one line naming WORKERS.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REDIS_URL, createTestDatabase, testKeyPrefix, type TestDatabase } from '../helpers/services.js';
import { startBackend, type Backend } from './helpers/backend.js';
import {
  burst,
  failoversSince,
  keyWithPlan,
  logged,
  outputMark,
  Replicas,
  totalOn,
  msUntilSeenEverywhere,
  waitFor,
} from './helpers/replicas.js';
import { expectNoSecretsLogged, type Tollgate } from './helpers/tollgate.js';

const MAIN = resolve(import.meta.dirname, '../../dist/src/main.js');

let backend: Backend;
let database: TestDatabase;
let deployment: Replicas;
let tollgate: Tollgate;

beforeAll(async () => {
  [backend, database] = await Promise.all([startBackend(), createTestDatabase()]);
  deployment = new Replicas({
    DATABASE_URL: database.url,
    REDIS_URL,
    REDIS_KEY_PREFIX: testKeyPrefix(),
    UPSTREAM_URL: backend.url,
    WORKERS: '2',
    // It counts and does not time Redis: an answer read late by a worker starved of CPU must not
    // count as Redis failing (docs/decisions/0230).
    REDIS_COMMAND_TIMEOUT_MS: '5000',
  });
  [tollgate] = (await deployment.start(1)) as [Tollgate];
}, 60_000);

afterAll(async () => {
  await deployment?.stopAll();
  await backend?.close();
  await database?.drop();
  if (tollgate) expectNoSecretsLogged();
}, 60_000);

/** pids of the workers that logged they listen. */
const listening = () =>
  new Set(
    tollgate.output
      .filter((l) => l.includes('"tollgate listening"'))
      .map((l) => (JSON.parse(l) as { pid: number }).pid),
  );

describe('WORKERS=2 with Redis', () => {
  it('runs two worker processes on one port', async () => {
    const workers = await waitFor(
      async () => listening(),
      (pids) => pids.size === 2,
      { timeoutMs: 30_000, everyMs: 100 },
    );
    expect(workers.value.size).toBe(2);
    expect(workers.value.has(tollgate.process.pid!)).toBe(false);
    const ports = new Set(
      tollgate.output
        .filter((l) => l.includes('"tollgate listening"'))
        .map((l) => (JSON.parse(l) as { port: number }).port),
    );
    expect(ports.size).toBe(1);
  }, 40_000);

  it('sums the metrics of every worker in each scrape of the one ops port', async () => {
    const key = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'scraped' });
    const forwarded = async () => {
      const text = await (await fetch(tollgate.opsUrl + '/metrics')).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('tollgate_proxy_requests_total{outcome="forwarded"}'));
      return Number(line?.split(' ')[1] ?? 0);
    };
    const before = await forwarded();
    // A fresh connection per request: the primary hands connections to the workers in turn.
    const N = 40;
    for (let i = 0; i < N; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          tollgate.url + '/v1/scraped',
          { agent: false, headers: { 'x-api-key': key.body.secret } },
          (res) => {
            res.resume();
            res.once('end', () => resolve(res.statusCode!));
          },
        );
        req.once('error', reject);
        req.end();
      });
      expect(status).toBe(200);
    }
    const scrapes = [];
    for (let i = 0; i < 6; i++) scrapes.push((await forwarded()) - before);
    expect(scrapes).toEqual(Array(6).fill(N));
  });

  it('admits exactly L of 200 concurrent requests and counts all 200', async () => {
    const key = await keyWithPlan(tollgate, 'workers', 40);
    const mark = outputMark([tollgate]);
    const statuses = await burst([tollgate], key.secret, 200, '/v1/workers');
    expect({
      admitted: statuses.filter((s) => s === 200).length,
      refused: statuses.filter((s) => s === 429).length,
      forwarded: backend.received.filter((r) => r.url === '/v1/workers').length,
      failovers: failoversSince([tollgate], mark),
    }).toEqual({ admitted: 40, refused: 160, forwarded: 40, failovers: [] });
    // Each detail call lands on either worker; both must show all 200 within 2 s (the reads' own
    // answers not counted: a whole test run on 2 CPUs slows them by themselves).
    const probes = Array.from({ length: 6 }, () => async () => (await totalOn(tollgate, key.id)) === 200);
    expect(await msUntilSeenEverywhere(performance.now(), probes)).toBeLessThanOrEqual(2_000);
  });

  it('replaces a worker killed with SIGKILL and keeps counting as one', async () => {
    const [victim] = [...listening()];
    process.kill(victim!, 'SIGKILL');
    const replaced = await waitFor(
      async () => listening(),
      (pids) => pids.size === 3,
      { timeoutMs: 30_000, everyMs: 100 },
    );
    expect(replaced.value.size).toBe(3);
    await logged(tollgate, `worker ${victim} exited`);

    const key = await keyWithPlan(tollgate, 'after-kill', 15);
    const mark = outputMark([tollgate]);
    const statuses = await burst([tollgate], key.secret, 60, '/v1/after-kill');
    expect({
      admitted: statuses.filter((s) => s === 200).length,
      refused: statuses.filter((s) => s === 429).length,
      forwarded: backend.received.filter((r) => r.url === '/v1/after-kill').length,
      failovers: failoversSince([tollgate], mark),
    }).toEqual({ admitted: 15, refused: 45, forwarded: 15, failovers: [] });
  }, 40_000);

  it('stops both workers on SIGTERM and exits 0', async () => {
    expect(await tollgate.stop()).toBe(0);
  }, 30_000);
});

describe('WORKERS=2 without Redis', () => {
  it('refuses to start with one line naming WORKERS', async () => {
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        WORKERS: '2',
        PORT: '0',
        OPS_PORT: '0',
        ROOT_TOKEN: 'root-token-for-workers-test',
        DATA_DIR: mkdtempSync(join(tmpdir(), 'tollgate-workers-')),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    clearTimeout(timer);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/WORKERS/);
    expect(lines[0]).toMatch(/REDIS_URL/);
  }, 30_000);
});
