/**
 * The failure log (docs/guides/failures.md) through the real proxy, embedded and with Redis +
 * Postgres: each kind of failure with its request id, code and limit, never a secret or a query
 * string; the bound of 100 per key per minute with `leftOut` (on the app's clock); the filters, CSV
 * and pages; 404 for an unknown key or consumer; a batch applied twice adds its entries once.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { failureEntry } from '../helpers/failure-entry.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';
import { createLogger } from '../../src/ops/logger.js';
import { emptyFailureLog, leftOutKey } from '../../src/usage/failure-log.js';
import { FailureLogRepository } from '../../src/usage/failure-log-repository.js';
import { pruneFailureLog } from '../../src/usage/retention.js';
import { UsageRepository } from '../../src/usage/usage-repository.js';
import { emptyKeyUsage, emptyEndpoint, type UsageBatch } from '../../src/usage/usage.js';

afterAll(closeDatabase);

let checker: OpenApiChecker;
beforeAll(async () => {
  checker = await OpenApiChecker.create();
});

interface Failure {
  time: string;
  requestId: string;
  consumerApiKeyId: string;
  consumerId: string | null;
  method: string;
  path: string;
  status: number;
  code: string;
  limit: { name: string; period: string; scope: string; limit: number; per?: string } | null;
  clientAddress: string | null;
  customerId: string | null;
  durationMs: number;
}
interface Page {
  failures: Failure[];
  nextCursor?: string;
  leftOut: number;
}

describe.each(HARNESS_MODES)('failure log, $name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;

  beforeAll(async () => {
    stop = await mode.start(h, { upstreamTimeoutMs: 300 });
    // Well past the timeout: undici counts it on a clock that ticks every half second, and on a
    // loaded machine its ticks come late (a backend answering after 1.5 s once beat it).
    h.backend.slowMs = 5_000;
  }, 60_000);

  afterAll(async () => {
    await stop?.();
  });

  /** A proxied request with `secret`; its status and the request id the client got. */
  async function proxied(secret: string, path: string, headers: Record<string, string> = {}) {
    const res = await fetch(h.base + path, { headers: { authorization: `Bearer ${secret}`, ...headers } });
    await res.text();
    return { status: res.status, requestId: res.headers.get('x-request-id')! };
  }

  /** A page of failures, checked against the OpenAPI document. */
  async function failures(path: string, query = ''): Promise<Page> {
    const res = await h.manage(`${path}${query}`);
    const text = await res.text();
    expect(res.status).toBe(200);
    const body = JSON.parse(text) as Page;
    expect(
      checker.problems(
        'get',
        path.replace(/^\/consumer-api-key\/[^/]+/, '/consumer-api-key/{consumerApiKeyId}'),
        {
          status: res.status,
          body,
          headers: Object.fromEntries(res.headers),
        },
      ),
    ).toEqual([]);
    return body;
  }

  /** Waits until the key's log holds `n` entries (they travel with the usage batches). */
  async function logged(keyId: string, n: number): Promise<Page> {
    const { value } = await waitFor(
      () => failures(`/consumer-api-key/${keyId}/failures`, '?limit=1000'),
      (page) => page.failures.length >= n,
      { timeoutMs: 5_000 },
    );
    expect(value.failures).toHaveLength(n);
    return value;
  }

  /**
   * Stops the app's clock at the start of an hour still ahead of the wall clock: Redis expires a
   * window's count on its own clock, so the window must end in its future, and an hourly limit's two
   * requests fall in one window however slow the machine is.
   */
  function freezeAheadOfWallClock(): void {
    h.now = Math.max(h.now, (Math.floor(Date.now() / 3_600_000) + 1) * 3_600_000 + 250);
  }

  it('logs each kind of failure with its request id, code and refusing limit, and never a secret, header or query', async () => {
    freezeAheadOfWallClock();
    const limited = await h.createKey({ limit: 1, period: 'hour', name: 'hourly' });
    const key = await h.createKey();
    expect((await proxied(limited.secret, '/ok')).status).toBe(200);
    // The limiter may take a moment to see the first request (Redis mode): the first 429 is logged.
    const { value: tooMany } = await waitFor(
      () => proxied(limited.secret, '/ok?token=query-secret', { 'x-customer-id': 'cus_9' }),
      (reply) => reply.status !== 200,
    );
    expect(tooMany.status).toBe(429);
    const backend = await proxied(key.secret, '/status/503?api_key=query-secret', {
      'x-private-note': 'private-header-value',
      cookie: 'session=cookie-secret',
    });
    // A millisecond apart on the app's clock: a batch carries entries in no particular order.
    h.now += 1;
    const notFound = await proxied(key.secret, '/status/404');
    h.now += 1;
    const timeout = await proxied(key.secret, '/slow', { 'x-request-id': 'support-ticket-42' });
    expect([backend.status, notFound.status, timeout.status]).toEqual([503, 404, 504]);

    const limitedLog = await logged(limited.id, 1);
    expect(limitedLog.failures[0]).toMatchObject({
      requestId: tooMany.requestId,
      consumerApiKeyId: limited.id,
      method: 'GET',
      path: '/ok',
      status: 429,
      code: 'rate_limit_exceeded',
      limit: { name: 'hourly', period: 'hour', scope: 'key', limit: 1, per: 'key' },
      clientAddress: '127.0.0.1',
      customerId: 'cus_9',
    });
    expect(limitedLog.failures[0]!.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const log = await logged(key.id, 3);
    // Newest first.
    expect(log.failures.map((f) => [f.status, f.code, f.path, f.limit])).toEqual([
      [504, 'gateway_timeout', '/slow', null],
      [404, 'backend_client_error', '/status/404', null],
      [503, 'backend_error', '/status/503', null],
    ]);
    expect(log.failures[0]!.requestId).toBe('support-ticket-42');
    expect(log.failures[0]!.durationMs).toBeGreaterThanOrEqual(250);
    expect(log.leftOut).toBe(0);
    // Neither the answers nor the stored rows hold a credential, a query or another header's value.
    const stored = await h.db.db.selectFrom('failure_log').selectAll().execute();
    const everything = JSON.stringify([limitedLog, log, stored]);
    for (const secret of [
      limited.secret,
      key.secret,
      'query-secret',
      'Bearer',
      'private-header-value',
      'cookie-secret',
    ])
      expect(everything).not.toContain(secret);

    // The fleet finds a request by its id; a code filters.
    const fleet = await failures('/tollgate/failures', `?requestId=${tooMany.requestId}`);
    expect(fleet.failures.map((f) => f.consumerApiKeyId)).toEqual([limited.id]);
    const timeouts = await failures(`/consumer-api-key/${key.id}/failures`, '?code=gateway_timeout');
    expect(timeouts.failures.map((f) => f.requestId)).toEqual(['support-ticket-42']);
  });

  it('logs a verify call refused for a valid key, under the request id of the call', async () => {
    freezeAheadOfWallClock();
    const key = await h.createKey({ limit: 1, period: 'hour', name: 'hourly', per: 'clientAddress' });
    const verify = () =>
      fetch(`${h.base}/tollgate/verify`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          key: key.secret,
          path: '/v1/search',
          method: 'post',
          clientAddress: '203.0.113.7',
        }),
      });
    expect(((await (await verify()).json()) as { valid: boolean }).valid).toBe(true);
    const { value: refused } = await waitFor(
      async () => {
        const res = await verify();
        return { requestId: res.headers.get('x-request-id'), body: (await res.json()) as { code: string } };
      },
      (reply) => reply.body.code !== 'ok',
    );
    expect(refused.body.code).toBe('rate_limit_exceeded');
    const [entry] = (await logged(key.id, 1)).failures;
    expect(entry).toMatchObject({
      requestId: refused.requestId,
      method: 'POST',
      path: '/v1/search',
      status: 429,
      code: 'rate_limit_exceeded',
      limit: { name: 'hourly', scope: 'key', limit: 1, per: 'clientAddress' },
      clientAddress: '203.0.113.7',
    });
  });

  it('keeps 100 failures per key per minute and counts the rest in leftOut, by minute and code', async () => {
    const key = await h.createKey();
    for (let i = 0; i < 105; i++) expect((await proxied(key.secret, '/status/500')).status).toBe(500);
    h.now += 60_000;
    expect((await proxied(key.secret, '/status/502')).status).toBe(502);
    const page = await logged(key.id, 101);
    expect(page.leftOut).toBe(5);
    expect(page.failures[0]!.code).toBe('backend_error');
    // The next minute alone: its one entry, nothing left out.
    const from = new Date(h.now - (h.now % 60_000)).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const next = await failures(`/consumer-api-key/${key.id}/failures`, `?from=${from}`);
    expect([next.failures.length, next.leftOut]).toEqual([1, 0]);
    // Another code: nothing of it was left out.
    expect((await failures(`/consumer-api-key/${key.id}/failures`, '?code=gateway_timeout')).leftOut).toBe(0);
  });

  it('pages newest first with a cursor, answers CSV, and 404 for an unknown key or consumer', async () => {
    const key = await h.createKey();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      h.now += 1_000;
      ids.push((await proxied(key.secret, `/status/50${i}`)).requestId);
    }
    await logged(key.id, 5);
    const seen: string[] = [];
    let cursor = '';
    for (let pages = 0; pages < 5; pages++) {
      const page = await failures(`/consumer-api-key/${key.id}/failures`, `?limit=2${cursor}`);
      seen.push(...page.failures.map((f) => f.requestId));
      if (page.nextCursor === undefined) break;
      cursor = `&cursor=${page.nextCursor}`;
    }
    expect(seen).toEqual(ids.reverse());

    const csv = await fetch(`${h.base}/consumer-api-key/${key.id}/failures?limit=2`, {
      headers: { authorization: `Bearer ${h.rootToken}`, accept: 'text/csv' },
    });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('x-next-cursor')).not.toBeNull();
    const lines = (await csv.text()).trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'time,requestId,consumerApiKeyId,consumerId,method,path,routeId,status,code,limitName,limitPeriod,limitScope,limit,clientAddress,customerId,durationMs',
    );
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain(`"${ids[0]}",${key.id},,"GET","/status/504",`);

    expect((await h.manage('/consumer-api-key/key_unknown/failures')).status).toBe(404);
    const consumer = await h.manage(`/tollgate/consumers/con_${'A'.repeat(22)}/failures`);
    expect([consumer.status, ((await consumer.json()) as { code: string }).code]).toEqual([
      404,
      'consumer_not_found',
    ]);
  });

  it('adds a batch applied again under its id once: its entries too', async () => {
    const repository = new UsageRepository(h.db.db, () => h.now);
    const keyId = 'key_' + randomBytes(8).toString('hex');
    const usage = emptyKeyUsage();
    usage.endpoints.set('/x', { ...emptyEndpoint(), requests: 1, failed: 1 });
    const log = emptyFailureLog();
    log.entries.push(failureEntry({ atMs: h.now, requestId: 'retried-' + keyId, path: '/x' }));
    const batch: UsageBatch = new Map([[keyId, { ...usage, failures: log }]]);
    const batchId = 'batch-' + keyId;
    expect(await repository.applyBatch(batchId, batch)).toBe(true);
    expect(await repository.applyBatch(batchId, batch)).toBe(false);
    const found = await failures('/tollgate/failures', `?requestId=retried-${keyId}`);
    expect(found.failures).toHaveLength(1);
  });

  it('keeps 100 entries of a key per minute across replicas whose batches are applied at once', async () => {
    // Two replicas each kept 80 failures of the key's minute (below their own bound) and hand them
    // over at the same moment: the store keeps 100 and counts the other 60 as left out.
    const keyId = 'key_' + randomBytes(8).toString('hex');
    const minuteMs = h.now - (h.now % 60_000);
    const batchOf = (replica: string): UsageBatch => {
      const usage = emptyKeyUsage();
      usage.endpoints.set('/x', { ...emptyEndpoint(), requests: 80, failed: 80 });
      const log = emptyFailureLog();
      for (let i = 0; i < 80; i++)
        log.entries.push(
          failureEntry({ atMs: minuteMs + i, requestId: `${replica}-${i}-${keyId}`, code: 'backend_error' }),
        );
      log.leftOut.set(leftOutKey(minuteMs, null, 'backend_error'), 3);
      return new Map([[keyId, { ...usage, failures: log }]]);
    };
    const replicas = ['a', 'b'].map((name) => ({
      name,
      repository: new UsageRepository(h.db.db, () => h.now),
    }));
    expect(
      await Promise.all(
        replicas.map((r) => r.repository.applyBatch(`bound-${r.name}-${keyId}`, batchOf(r.name))),
      ),
    ).toEqual([true, true]);
    // No key has this id: the store is read as the operations read it.
    const log = new FailureLogRepository(h.db.db);
    const all = { scope: { keyId }, fromMs: 0, toMs: Number.MAX_SAFE_INTEGER };
    expect((await log.list({ ...all, limit: 1_000 })).length).toBe(100);
    // 60 past the bound, and the 3 each replica had left out itself.
    expect(await log.leftOut(all)).toBe(66);
    expect(await log.leftOut({ ...all, code: 'backend_error' })).toBe(66);
    // The next minute starts again.
    const nextMinute = emptyFailureLog();
    nextMinute.entries.push(failureEntry({ atMs: minuteMs + 60_000, requestId: `next-${keyId}` }));
    await replicas[0]!.repository.applyBatch(
      `bound-next-${keyId}`,
      new Map([[keyId, { ...emptyKeyUsage(), failures: nextMinute }]]),
    );
    expect((await log.list({ ...all, limit: 1_000 })).length).toBe(101);
  });

  it('prunes entries and left-out counts older than FAILURE_LOG_RETENTION_DAYS', async () => {
    const repository = new UsageRepository(h.db.db, () => h.now);
    const keyId = 'key_' + randomBytes(8).toString('hex');
    const usage = emptyKeyUsage();
    usage.endpoints.set('/x', { ...emptyEndpoint(), requests: 2, failed: 2 });
    const log = emptyFailureLog();
    const old = h.now - 8 * 86_400_000;
    log.entries.push(failureEntry({ atMs: old, requestId: 'old-' + keyId }));
    log.entries.push(failureEntry({ atMs: h.now, requestId: 'new-' + keyId }));
    log.leftOut.set(leftOutKey(old - (old % 60_000), null, 'backend_error'), 3);
    await repository.applyBatch('prune-' + keyId, new Map([[keyId, { ...usage, failures: log }]]));
    const kept = new FailureLogRepository(h.db.db);
    const all = { scope: { keyId }, fromMs: 0, toMs: Number.MAX_SAFE_INTEGER };
    expect(await kept.leftOut(all)).toBe(3);
    await pruneFailureLog(kept, h.config.failureLogRetentionDays, createLogger('silent'), h.now);
    const left = await kept.list({ ...all, limit: 10 });
    expect(left.map((f) => f.requestId)).toEqual(['new-' + keyId]);
    expect(await kept.leftOut(all)).toBe(0);
  });
});
