/**
 * Paths a backend normalises are counted as the path it runs (docs/guides/routes.md, "Paths"): a
 * Fastify 5 backend decodes `%73` to `s`, an Express 5 backend routes without regard to case. Each
 * stands behind Tollgate with a plan whose limit and cost match `/v2/search`; the other spellings of
 * that path are charged to the limit, refused once it runs out, and reach the backend normalised, in
 * both modes. Verify matches the same normalised path.
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';
import { DAY_MS, HOUR_MS, TestClock } from '../helpers/test-clock.js';

afterAll(closeDatabase);

/** The request targets each priced handler ran for, as the backend received them. */
type Ran = string[];

async function fastifyBackend(ran: Ran): Promise<{ app: FastifyInstance; port: number }> {
  const app = Fastify();
  app.get('/v2/search/:q', async (request) => {
    ran.push(request.raw.url!);
    return { results: [] };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as AddressInfo).port };
}

async function expressBackend(ran: Ran): Promise<{ server: Server; port: number }> {
  const app = express();
  app.get('/v2/search/:q', (req, res) => {
    ran.push(req.originalUrl);
    res.json({ results: [] });
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/** A proxied GET with a Host header of its own (the route is chosen by host). */
function get(port: number, host: string, path: string, secret: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path, headers: { host, authorization: `Bearer ${secret}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  const fastifyRan: Ran = [];
  const expressRan: Ran = [];
  let fastify: FastifyInstance;
  let expressServer: Server;
  let stop: () => Promise<void>;

  async function api(method: string, path: string, body?: unknown) {
    const res = await fetch(h.base + path, {
      method,
      headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
    const answer = (await res.json()) as any;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  }

  /** A key whose plan allows 3 searches (cost 2 each, so 6 units) a day, by `match`. */
  async function searchKey(match: Record<string, unknown>): Promise<{ id: string; secret: string }> {
    const rateLimitId = `search-${randomBytes(4).toString('hex')}`;
    await api('POST', '/rate-limit/create', {
      rateLimitId,
      limits: [{ name: 'searches', limit: 6, period: 'day', match }],
      costs: [{ match, cost: 2 }],
    });
    return api('POST', '/consumer-api-key/create', { name: rateLimitId, rateLimitId });
  }

  beforeAll(async () => {
    let fastifyPort: number;
    let expressPort: number;
    ({ app: fastify, port: fastifyPort } = await fastifyBackend(fastifyRan));
    ({ server: expressServer, port: expressPort } = await expressBackend(expressRan));
    // Redis expires counts in real time: the injected clock stands at noon of the next day, so the
    // day's window neither lies in the past nor ends during the test.
    h.now = new TestClock().after(DAY_MS, 12 * HOUR_MS) + 12 * HOUR_MS;
    stop = await mode.start(h);
    await api('POST', '/tollgate/routes', {
      routeId: 'fastify',
      match: { host: 'fastify.test', pathPrefix: '/' },
      upstreamUrl: `http://127.0.0.1:${fastifyPort}`,
    });
    await api('POST', '/tollgate/routes', {
      routeId: 'express',
      match: { host: 'express.test', pathPrefix: '/v2', caseInsensitive: true },
      upstreamUrl: `http://127.0.0.1:${expressPort}`,
    });
    // The routes reach the proxy within a second.
    const probe = await searchKey({ routeIds: ['fastify', 'express'] });
    const routed = await waitFor(
      async () => {
        const before = fastifyRan.length + expressRan.length;
        await get(h.port, 'fastify.test', '/v2/search/probe', probe.secret);
        await get(h.port, 'express.test', '/V2/search/probe', probe.secret);
        return fastifyRan.length + expressRan.length - before;
      },
      (reached) => reached === 2,
      { timeoutMs: 3_000, everyMs: 20 },
    );
    expect(routed.value).toBe(2);
    fastifyRan.length = 0;
    expressRan.length = 0;
  }, 120_000);

  afterAll(async () => {
    await stop();
    await fastify.close();
    await new Promise((resolve) => expressServer.close(resolve));
  });

  it('counts the encoded spellings a Fastify backend decodes against the limit, and forwards them decoded', async () => {
    const key = await searchKey({ pathPrefix: '/v2/search' });
    const statuses = [];
    for (const path of [
      '/v2/search/a',
      '/v2/%73earch/b',
      '/%76%32/search/c',
      '/v2/%73earch/d',
      '/%76%32/search/e',
    ])
      statuses.push(await get(h.port, 'fastify.test', path, key.secret));
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    // The handler ran three times, for the path the limit counted.
    expect(fastifyRan).toEqual(['/v2/search/a', '/v2/search/b', '/v2/search/c']);
    expect(await h.usage(key.id)).toMatchObject({ successful: 3, failed: 2, cost: 6 });
  });

  it('counts the upper-case spelling an Express backend routes alike when the match is caseInsensitive', async () => {
    const key = await searchKey({ pathPrefix: '/v2/search', caseInsensitive: true });
    const statuses = [];
    for (const path of ['/V2/SEARCH/a', '/v2/Search/b', '/V2/%73EARCH/c', '/V2/SEARCH/d', '/v2/search/e'])
      statuses.push(await get(h.port, 'express.test', path, key.secret));
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(expressRan).toEqual(['/V2/SEARCH/a', '/v2/Search/b', '/V2/sEARCH/c']);
    expect(await h.usage(key.id)).toMatchObject({ successful: 3, failed: 2, cost: 6 });
  });

  it('verifies the normalised path: an encoded spelling is priced and limited as the proxy prices it', async () => {
    const key = await searchKey({ pathPrefix: '/v2/search' });
    const verify = (path: string) =>
      api('POST', '/tollgate/verify', { key: key.secret, method: 'GET', host: 'fastify.test', path });
    const answers = [];
    for (const path of ['/v2/%73earch/a', '/%76%32/search/b', '/v2/search/c', '/v2/%73earch/d'])
      answers.push(await verify(path));
    expect(answers.map((a) => [a.code, a.cost])).toEqual([
      ['ok', 2],
      ['ok', 2],
      ['ok', 2],
      ['rate_limit_exceeded', undefined],
    ]);
    expect((await h.usage(key.id)).endpoints).toEqual(
      expect.arrayContaining(['/v2/search/a', '/v2/search/b', '/v2/search/c', '/v2/search/d']),
    );
  });
});
