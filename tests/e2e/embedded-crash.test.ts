/**
 * The embedded default survives being killed (docs/decisions/0019): SIGKILL under load at a random moment, then a
 * restart on the same DATA_DIR, fifteen times in a row (a start takes about a second, so the whole run
 * stays under a minute). The load is proxied requests with keys of one consumer (each key with a plan
 * of its own, and the consumer's), each client pausing between them so that the proof does not take
 * the CPU the other test files share, and, in the moments before the kill, plans and keys bound to them
 * created one after another, so the kill can land in the middle of a write. Every key, plan and binding whose creation
 * was acknowledged is there after each restart, and a key's usage, and the consumer's, is short by at
 * most what the killed processes answered in their last second, never more than was answered; a key's
 * series by route (the load takes route `crash`) counts exactly what its totals count.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from './helpers/backend.js';
import { consumerWithKeys, hit, keyWithPlan, sleep, totalOn, usageOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const KILLS = 15;
/** How long before each kill plans and keys are being created. */
const WRITING_MS = 300;
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-crash-'));
const rootToken = 'root-' + randomBytes(16).toString('hex');
let backend: Backend;
let tollgate: Tollgate | undefined;

beforeAll(async () => {
  backend = await startBackend();
}, 60_000);

afterAll(async () => {
  await tollgate?.stop();
  await backend?.close();
  rmSync(dataDir, { recursive: true, force: true });
  expectNoSecretsLogged();
}, 60_000);

it(`keeps every acknowledged key, plan and binding across ${KILLS} SIGKILLs under load, and counts their consumer's usage at most once`, async () => {
  const acknowledged: { id: string; secret: string; answered: number; lastSecond: number }[] = [];
  /** Per round, the plans and keys bound to them whose creation was answered 201 while the load ran. */
  const written: { planId: string; keyId?: string }[][] = [];
  const expectWritten = async (t: Tollgate, rounds: { planId: string; keyId?: string }[][]) => {
    for (const { planId, keyId } of rounds.flat()) {
      expect((await t.admin('GET', `/rate-limit/${planId}`)).status).toBe(200);
      if (keyId !== undefined)
        expect((await t.admin('GET', `/consumer-api-key/${keyId}`)).body.rateLimitId).toBe(planId);
    }
  };
  let consumerId: string | undefined;
  /** What the consumer's usage may show: what its keys were answered, less at most their last seconds. */
  const consumerUsage = async (t: Tollgate) => {
    const answered = acknowledged.reduce((n, key) => n + key.answered, 0);
    const atRisk = acknowledged.reduce((n, key) => n + key.lastSecond, 0);
    const { total } = (await usageOn(t, `/tollgate/consumers/${consumerId}`))!;
    expect(total).toBeLessThanOrEqual(answered);
    expect(total).toBeGreaterThanOrEqual(answered - atRisk);
    // Each request once: the consumer's total is its keys' totals summed.
    const keys = await Promise.all(acknowledged.map((key) => totalOn(t, key.id)));
    expect(total).toBe(keys.reduce((n: number, k) => n + k!, 0));
    return total;
  };
  for (let round = 0; round < KILLS; round++) {
    tollgate = await startTollgate({ DATA_DIR: dataDir, ROOT_TOKEN: rootToken, UPSTREAM_URL: backend.url });
    if (round === 0) {
      const route = { routeId: 'crash', match: { pathPrefix: '/v1/crash' }, upstreamUrl: backend.url };
      expect((await tollgate.admin('POST', '/tollgate/routes', route)).status).toBe(201);
      await sleep(1_000); // in force within a second
    }
    consumerId ??= (await consumerWithKeys(tollgate, 'crashing', { keys: 0, limit: 1_000_000_000 }))
      .consumerId;
    await consumerUsage(tollgate);
    // The writes of the round just killed here; all of them again at the end.
    await expectWritten(tollgate, written.slice(-1));
    // Everything acknowledged before is here, with its plan; usage short by at most the last second.
    for (const key of acknowledged) {
      const detail = await tollgate.admin('GET', `/consumer-api-key/${key.id}`);
      expect(detail.status).toBe(200);
      expect(detail.body.secret).toBe(key.secret);
      expect(detail.body.rateLimitId).toEqual(expect.any(String));
      expect(detail.body.usage.rateLimits).toMatchObject({ limit: 1_000_000 });
      expect(detail.body.usage.totalRequests).toBeLessThanOrEqual(key.answered);
      expect(detail.body.usage.totalRequests).toBeGreaterThanOrEqual(key.answered - key.lastSecond);
    }
    const key = {
      ...(await keyWithPlan(tollgate, `crash-${round}`, 1_000_000, 'day', consumerId)),
      answered: 0,
      lastSecond: 0,
    };
    acknowledged.push(key);
    const t = tollgate;
    const answeredAt: number[] = [];
    let running = true;
    const loops = Array.from({ length: 4 }, async () => {
      while (running) {
        if ((await hit(t, key.secret, '/v1/crash')) === 200) answeredAt.push(Date.now());
        await sleep(10);
      }
    });
    /** Answers after the kill are connection errors: nothing acknowledged. */
    const created = (method: string, path: string, body: unknown) =>
      t.admin(method, path, body).then(
        (r) => r.status === 201 && r.body,
        () => false,
      );
    const writes: { planId: string; keyId?: string }[] = [];
    written.push(writes);
    const killAfterMs = 1_200 + randomInt(800);
    // The writes begin shortly before the kill: it lands among them all the same, and what is read back
    // after each restart stays a few hundred records, not thousands.
    const writer = (async () => {
      await sleep(killAfterMs - WRITING_MS);
      for (let n = 0; running; n++) {
        const planId = `crash-${round}-${n}`;
        if (
          !(await created('POST', '/rate-limit/create', { rateLimitId: planId, limit: 10, period: 'minute' }))
        )
          continue;
        const entry: { planId: string; keyId?: string } = { planId };
        writes.push(entry);
        const bound = await created('POST', '/consumer-api-key/create', {
          name: planId,
          rateLimitId: planId,
        });
        if (bound) entry.keyId = bound.id as string;
      }
    })();
    await sleep(killAfterMs);
    // On a loaded machine a plan and its key can outlast the window: the kill waits for one of each.
    await waitFor(
      async () => writes.some((e) => e.keyId !== undefined),
      (bound) => bound,
      { timeoutMs: 30_000, everyMs: 5 },
    );
    const killedAt = Date.now();
    t.process.kill('SIGKILL');
    running = false;
    await Promise.all([...loops, writer]);
    key.answered = answeredAt.length;
    key.lastSecond = answeredAt.filter((at) => at > killedAt - 1_000).length;
    expect(key.answered).toBeGreaterThan(0);
    await new Promise((r) =>
      t.process.exitCode !== null || t.process.signalCode !== null ? r(undefined) : t.process.once('exit', r),
    );
  }
  tollgate = await startTollgate({ DATA_DIR: dataDir, ROOT_TOKEN: rootToken, UPSTREAM_URL: backend.url });
  await expectWritten(tollgate, written);
  // Every round wrote plans and keys while it was killed.
  expect(written.map((w) => w.filter((e) => e.keyId !== undefined).length)).not.toContain(0);
  const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19) + 'Z';
  for (const key of acknowledged) {
    const total = await totalOn(tollgate, key.id);
    expect(total).toBeLessThanOrEqual(key.answered);
    expect(total).toBeGreaterThanOrEqual(key.answered - key.lastSecond);
    const byRoute = await tollgate.admin(
      'GET',
      `/consumer-api-key/${key.id}/usage?granularity=day&from=${from}&groupBy=route`,
    );
    expect(
      (byRoute.body.series as { routeId: string | null; buckets: { requests: number }[] }[]).map((s) => [
        s.routeId,
        s.buckets.reduce((n, b) => n + b.requests, 0),
      ]),
    ).toEqual([['crash', total]]);
  }
  // The consumer's usage over time counts what its detail counts, once.
  const total = await consumerUsage(tollgate);
  const overTime = await tollgate.admin('GET', `/tollgate/consumers/${consumerId}/usage?granularity=hour`);
  expect(overTime.body.buckets.reduce((n: number, b: { requests: number }) => n + b.requests, 0)).toBe(total);
  console.log(
    `${KILLS} SIGKILLs: the consumer's keys were answered ${acknowledged.reduce((n, k) => n + k.answered, 0)} requests, ${acknowledged.reduce((n, k) => n + k.lastSecond, 0)} of them in a last second; it counts ${total}`,
  );
}, 300_000);
