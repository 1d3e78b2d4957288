/**
 * A request's latency in usage is the time to its answer's end, as its client saw it, never the time
 * Tollgate took to count it after. A usage-priced request long in flight has a record to take back
 * before it is counted (src/reservations/in-flight.ts): here its store answers slowly as the answer
 * ends (an embedded database answering 1.5 s late, a private Redis paused 1.5 s), and the latency
 * usage shows is still within its percentiles' 5 % of what the client measured.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ModelBackend, sendJson } from '../helpers/model-backend.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';
import { RedisServer } from '../helpers/redis-server.js';
import { testKeyPrefix } from '../helpers/services.js';

afterAll(closeDatabase);

const STORE_STALL_MS = 1_500;
// The percentiles' bins are within 5 % of what they hold.
const WITHIN = 1.05;

interface Store {
  /** The harness's env for this store. */
  start(): Promise<Record<string, string>>;
  /** From now on the store of requests in flight answers STORE_STALL_MS late (or not until then). */
  stall(h: ProxyHarness): void;
  /** It answers at once again. */
  recover(h: ProxyHarness): void;
  close(): Promise<void>;
}

let redis: RedisServer | undefined;
const STORES: Record<string, Store> = {
  'embedded (its database)': {
    start: () => Promise.resolve({}),
    stall: (h) => h.databaseLatency(STORE_STALL_MS),
    recover: (h) => h.databaseLatency(0),
    close: () => Promise.resolve(),
  },
  'Redis mode (a private redis-server)': {
    async start() {
      redis = await RedisServer.start();
      return { REDIS_URL: redis.url, REDIS_KEY_PREFIX: testKeyPrefix() };
    },
    stall: () => redis!.pause(),
    recover: () => redis!.resume(),
    close: async () => redis?.destroy(),
  },
};

describe.each(Object.keys(STORES))('latency of a request long in flight, %s', (storeName) => {
  const store = STORES[storeName]!;

  it('is the time to its answer, not to its count after a store that answers late', async () => {
    let answer: (() => void) | undefined;
    const backend = await ModelBackend.start((_request, _json, response) => {
      answer = () => sendJson(response, { usage: { total_tokens: 70 } });
    });
    const h = new ProxyHarness();
    // Counts in Redis expire by the wall clock: the limiter's windows must be the real ones.
    h.realTime = true;
    try {
      await h.start({ env: await store.start() });
      const routeId = `held-${randomBytes(4).toString('hex')}`;
      const route = { routeId, match: { pathPrefix: `/v1/${routeId}` }, upstreamUrl: backend.url };
      expect((await h.admin('POST', '/tollgate/routes', route)).status).toBe(201);
      const plan = await h.admin('POST', '/rate-limit/create', {
        rateLimitId: `tokens-${randomBytes(4).toString('hex')}`,
        limits: [{ name: 'tokens', limit: 10_000, period: 'day' }],
        costs: [{ match: { routeIds: [routeId] }, cost: 500, settle: { preset: 'openai' } }],
        unit: 'tokens',
      });
      const key = (
        await h.admin('POST', '/consumer-api-key/create', {
          name: 'timed',
          rateLimitId: plan.body.rateLimitId,
        })
      ).body as { id: string; secret: string };

      const written = () => h.metric('tollgate_requests_in_flight_written');
      const sentAt = performance.now();
      const answered = fetch(`${h.base}/v1/${routeId}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        body: '{}',
      }).then((res) => res.json());
      await waitFor(written, (line) => line.endsWith(' 1'), { what: 'the request written down' });
      await waitFor(
        async () => answer !== undefined,
        (held) => held,
        { what: 'the backend holding the request' },
      );
      store.stall(h);
      answer!();
      expect(await answered).toEqual({ usage: { total_tokens: 70 } });
      const seenMs = performance.now() - sentAt;
      await new Promise((resolve) => setTimeout(resolve, STORE_STALL_MS));
      store.recover(h);
      await waitFor(written, (line) => line.endsWith(' 0'), {
        timeoutMs: 20_000,
        what: 'its record taken back',
      });

      // A flush that timed out in the stall may leave its lock to expire (10 s) before the next.
      const day = new Date().toISOString().slice(0, 10);
      const range = `granularity=day&from=${day}T00:00:00Z&to=${day}T23:59:59Z`;
      const { value: bucket } = await waitFor(
        async () =>
          (await h.admin('GET', `/consumer-api-key/${key.id}/usage?${range}`)).body.buckets[0] as {
            requests: number;
            latencyMs: { p99: number };
          },
        (b) => b.requests > 0,
        { timeoutMs: 30_000, everyMs: 200, what: 'the request in usage' },
      );
      expect(bucket.requests).toBe(1);
      // Counted once its record came back, past STORE_STALL_MS: its latency is still the answer's.
      expect(bucket.latencyMs.p99).toBeLessThanOrEqual(seenMs * WITHIN);
      expect(bucket.latencyMs.p99).toBeGreaterThanOrEqual(seenMs / 4);
    } finally {
      await h.stop();
      await backend.close();
      await store.close();
    }
  }, 60_000);
});
