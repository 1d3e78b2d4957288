/**
 * Switching plans through the proxy never grants a fresh quota (contract section 32, docs/guides/plans.md,
 * docs/decisions/0175): 5 spent under a plan of 5 an hour, then switched, by the management API, to a
 * plan of 5 an hour of another algorithm or with a match (and back), admits nothing more in that hour;
 * embedded (in-process counters) and in Redis + Postgres mode.
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, describe, expect, it } from '@jest/globals';
import { windowAt } from '../../src/plans/window.js';
import { HARNESS_MODES, harnessIn } from '../helpers/harness-modes.js';
import { closeDatabase } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

/** The status of a request by `secret` to `/v1/things`. */
function statusOf(port: number, secret: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: '/v1/things', headers: { 'x-api-key': secret } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const FIXED = { limit: 5, period: 'hour' };
/** Limits of 5 an hour that count the requests FIXED counts, by their name in the issue. */
const OTHERS: Record<string, Record<string, unknown>> = {
  sliding: { limit: 5, period: 'hour', algorithm: 'sliding' },
  'token bucket': { limit: 5, period: 'hour', algorithm: 'tokenBucket' },
  'fixed with a match': { limit: 5, period: 'hour', name: 'things', match: { pathPrefix: '/v1' } },
};
const PAIRS = Object.entries(OTHERS).flatMap(([name, other]) => [
  [`fixed → ${name}`, FIXED, other] as const,
  [`${name} → fixed`, other, FIXED] as const,
]);

describe.each(HARNESS_MODES.map((mode) => [mode.name, mode] as const))(
  'switching plans through the proxy, %s',
  (_name, mode) => {
    // Ahead of the wall clock, as counts in Redis expire by it: 10:00 tomorrow, an hour to spend in.
    const h = harnessIn(mode);
    h.now = windowAt('day', Date.now()).end + 10 * 3_600_000;

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
    async function api(method: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
      const res = await fetch(h.base + path, {
        method,
        headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    }
    async function planOf(limit: Record<string, unknown>): Promise<string> {
      const rateLimitId = `switch-${randomBytes(4).toString('hex')}`;
      expect((await api('POST', '/rate-limit/create', { rateLimitId, limits: [limit] })).status).toBe(201);
      return rateLimitId;
    }
    /** Spends the 5 of the hour, sees the 6th refused, and the statuses of 3 more once switched by `switchTo`. */
    async function afterSwitch(secret: string, switchTo: () => Promise<void>): Promise<number[]> {
      const spent = [];
      for (let i = 0; i < 6; i++) spent.push(await statusOf(h.port, secret));
      expect(spent).toEqual([200, 200, 200, 200, 200, 429]);
      await switchTo();
      const after = [];
      for (let i = 0; i < 3; i++) after.push(await statusOf(h.port, secret));
      return after;
    }

    it.each(PAIRS)('a key switched %s admits nothing more in the hour', async (_name, from, to) => {
      h.now += 1_000;
      const [fromPlan, toPlan] = [await planOf(from), await planOf(to)];
      const key = (await api('POST', '/consumer-api-key/create', { name: 'switcher', rateLimitId: fromPlan }))
        .body;
      const forwarded = () =>
        h.backend.received.filter((r) => r.headers['x-consumer-api-key-id'] === key.id).length;
      const after = await afterSwitch(key.secret, async () => {
        const applied = await api('POST', '/api-keys/apply-rate-limit', {
          consumerApiKeyId: key.id,
          rateLimitId: toPlan,
        });
        expect(applied.status).toBe(200);
      });
      expect(after).toEqual([429, 429, 429]);
      expect(forwarded()).toBe(5);
      // The new plan is the one deciding: a plan of 10 an hour admits the 5 left of it.
      const wider = await planOf({ limit: 10, period: 'hour' });
      await api('POST', '/api-keys/apply-rate-limit', { consumerApiKeyId: key.id, rateLimitId: wider });
      const widened = [];
      for (let i = 0; i < 6; i++) widened.push(await statusOf(h.port, key.secret));
      expect(widened).toEqual([200, 200, 200, 200, 200, 429]);
    });

    it('a consumer switched from fixed to sliding admits nothing more in the hour', async () => {
      h.now += 1_000;
      const [fromPlan, toPlan] = [await planOf(FIXED), await planOf(OTHERS.sliding!)];
      const consumer = (
        await api('POST', '/tollgate/consumers', { name: 'switching', rateLimitId: fromPlan })
      ).body;
      const key = (
        await api('POST', '/consumer-api-key/create', { name: 'k', consumerId: consumer.consumerId })
      ).body;
      const after = await afterSwitch(key.secret, async () => {
        const patched = await api('PATCH', `/tollgate/consumers/${consumer.consumerId}`, {
          rateLimitId: toPlan,
        });
        expect(patched.status).toBe(200);
      });
      expect(after).toEqual([429, 429, 429]);
    });
  },
);
