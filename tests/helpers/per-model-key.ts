/**
 * A key on a plan that limits gpt-4o by the request body (`match.body` on `/model`): the per-model limit
 * the request-body tests count against, whichever way the body reaches Tollgate.
 */
import { randomBytes } from 'node:crypto';
import { expect } from '@jest/globals';
import type { ProxyHarness } from './proxy-harness.js';

/** A key whose plan holds gpt-4o to `limit` units a day, with `costs` as the plan's cost entries. */
export async function perModelKey(
  h: ProxyHarness,
  limit: number,
  costs?: readonly unknown[],
): Promise<{ id: string; secret: string }> {
  const plan = await h.admin('POST', '/rate-limit/create', {
    rateLimitId: `per-model-${randomBytes(4).toString('hex')}`,
    limits: [
      { name: 'gpt-4o', limit, period: 'day', match: { body: { pointer: '/model', values: ['gpt-4o'] } } },
    ],
    ...(costs !== undefined && { costs, unit: 'tokens' }),
  });
  expect(plan.status).toBe(201);
  const key = await h.admin('POST', '/consumer-api-key/create', {
    name: 'per-model',
    rateLimitId: plan.body.rateLimitId,
  });
  expect(key.status).toBe(201);
  return key.body;
}

/** What is left of the gpt-4o limit of a key `perModelKey` made. */
export async function perModelRemaining(h: ProxyHarness, id: string): Promise<number> {
  return (await h.admin('GET', `/consumer-api-key/${id}`)).body.usage.rateLimits.limits[0]
    .remaining as number;
}
