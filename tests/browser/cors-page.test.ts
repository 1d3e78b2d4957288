/**
 * A real web page in Chromium, served on an origin of its own, calls an API through Tollgate
 * (docs/guides/browser.md), in both modes: GET and POST with `Authorization: Bearer` and with
 * `x-api-key` (each a preflight Tollgate answers), a 429 whose body and RateLimit headers the page
 * reads, tokens a backend minted for two visitors each with a limit of its own (`per: customer`), a
 * key refused from another allowed page (403 origin_not_allowed, readable), and a page whose
 * origin the route refuses, which the browser stops before anything reaches the backend.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { mintToken } from '../../packages/client/src/generated/mint-token.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness, RecordingBackend } from '../helpers/proxy-harness.js';
import { launchChromium } from './helpers/chromium.js';

afterAll(closeDatabase);

/** What the page saw of one call: its status, body and the headers it may read, or the browser's error. */
interface Seen {
  readonly status?: number;
  readonly body?: unknown;
  readonly rateLimit?: string | null;
  readonly retryAfter?: string | null;
  readonly error?: string;
}

/** The page's own server: one empty HTML page, on a port (and so an origin) of its own. */
async function pageServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>app</title><p>app</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Runs `fetch` in the page, as its own script would. */
function callFrom(
  page: Page,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<Seen> {
  return page.evaluate(
    async ({ url, init }) => {
      try {
        const answer = await fetch(url, init);
        const text = await answer.text();
        return {
          status: answer.status,
          body: text.startsWith('{') ? (JSON.parse(text) as unknown) : text,
          rateLimit: answer.headers.get('ratelimit'),
          retryAfter: answer.headers.get('retry-after'),
        };
      } catch (err) {
        return { error: String(err) };
      }
    },
    { url, init },
  );
}

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe.each(HARNESS_MODES)('a web page through Tollgate, $name', (mode) => {
  const h = new ProxyHarness();
  const api = new RecordingBackend();
  let stop: () => Promise<void>;
  let site: { server: Server; port: number };
  let page: Page;
  let pageOrigin: string;
  let otherOrigin: string;

  const manage = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(h.base + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
    return (await res.json()) as Record<string, unknown>;
  };

  beforeAll(async () => {
    // Redis expires a window's count at its end: the fixed clock of the harness lies in the past.
    h.realTime = true;
    const apiPort = await api.listen();
    stop = await mode.start(h);
    site = await pageServer();
    pageOrigin = `http://127.0.0.1:${site.port}`;
    // The same server under another name is another origin, one the route does not allow.
    otherOrigin = `http://localhost:${site.port}`;
    await manage('/tollgate/routes', {
      routeId: 'api',
      match: { pathPrefix: '/api' },
      upstreamUrl: `http://127.0.0.1:${apiPort}`,
      stripPrefix: true,
      cors: { allowedOrigins: [pageOrigin, 'http://127.0.0.2:1'] },
    });
    const context = await browser.newContext();
    page = await context.newPage();
    await page.goto(`${pageOrigin}/`);
    // The route is in force on this replica within a second.
    await waitFor(
      () => callFrom(page, `${h.base}/api/probe`, {}),
      (seen) => seen.status === 401,
      { timeoutMs: 3_000, everyMs: 50 },
    );
  }, 60_000);

  afterAll(async () => {
    await page?.context().close();
    await stop?.();
    await api.close();
    await new Promise((resolve) => site?.server.close(resolve));
  });

  it('GETs and POSTs with Authorization: Bearer and with x-api-key', async () => {
    const key = await manage('/consumer-api-key/create', { name: 'page', allowedOrigins: [pageOrigin] });
    const secret = key.secret as string;
    api.received.length = 0;

    const bearer = await callFrom(page, `${h.base}/api/items?q=1`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(bearer).toMatchObject({ status: 200, body: { ok: true, path: '/items?q=1' } });
    const posted = await callFrom(page, `${h.base}/api/echo`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ hello: 'tollgate' }),
    });
    expect(posted).toMatchObject({ status: 200, body: { hello: 'tollgate' } });
    const viaKeyHeader = await callFrom(page, `${h.base}/api/items`, { headers: { 'x-api-key': secret } });
    expect(viaKeyHeader.status).toBe(200);
    // Only the requests reached the backend: Tollgate answered their preflights itself.
    expect(api.received.map((r) => r.method)).toEqual(['GET', 'POST', 'GET']);
    expect(api.received[1]!.headers.origin).toBe(pageOrigin);
  });

  it('lets the page read a 429 and its RateLimit headers', async () => {
    const plan = 'page-' + Math.random().toString(36).slice(2, 8);
    await manage('/rate-limit/create', { rateLimitId: plan, limit: 2, period: 'hour' });
    const key = await manage('/consumer-api-key/create', { name: 'limited', rateLimitId: plan });
    const headers = { authorization: `Bearer ${key.secret as string}` };
    const first = await callFrom(page, `${h.base}/api/a`, { headers });
    expect(first.rateLimit).toMatch(/r=1/);
    await callFrom(page, `${h.base}/api/a`, { headers });
    const limited = await callFrom(page, `${h.base}/api/a`, { headers });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({
      code: 'rate_limit_exceeded',
      limit: 2,
      period: 'hour',
      remaining: 0,
    });
    expect(limited.rateLimit).toMatch(/r=0/);
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
  });

  it('calls with tokens a backend minted for two visitors, each with its own limit', async () => {
    const plan = 'visitor-' + Math.random().toString(36).slice(2, 8);
    await manage('/rate-limit/create', {
      rateLimitId: plan,
      limits: [{ name: 'each', limit: 2, period: 'hour', per: 'customer' }],
    });
    const key = await manage('/consumer-api-key/create', {
      name: 'tokens',
      rateLimitId: plan,
      allowedOrigins: [pageOrigin, 'http://127.0.0.2:1'],
    });
    // The page's backend mints them: the page never sees the key's secret.
    const tokenOf = (subject: string) =>
      mintToken(key.secret as string, {
        consumerApiKeyId: key.id as string,
        expiresInSeconds: 300,
        subject,
        origins: [pageOrigin],
      });
    const alice = { authorization: `Bearer ${tokenOf('alice')}` };
    api.received.length = 0;
    expect((await callFrom(page, `${h.base}/api/a`, { headers: alice })).rateLimit).toMatch(/r=1/);
    expect(
      (await callFrom(page, `${h.base}/api/a`, { method: 'POST', headers: alice, body: '{}' })).status,
    ).toBe(200);
    const limited = await callFrom(page, `${h.base}/api/a`, { headers: alice });
    expect(limited).toMatchObject({ status: 429, body: { name: 'each', per: 'customer' } });
    expect(limited.rateLimit).toMatch(/r=0/);
    const bob = await callFrom(page, `${h.base}/api/a`, { headers: { 'x-api-key': tokenOf('bob') } });
    expect(bob).toMatchObject({ status: 200 });
    expect(api.received.map((r) => [r.headers['x-api-key'], r.headers['x-customer-id']])).toEqual([
      [key.secret, 'alice'],
      [key.secret, 'alice'],
      [key.secret, 'bob'],
    ]);
  });

  it('refuses a key used from a page it is not tied to, and a page whose origin the route refuses', async () => {
    const elsewhere = await manage('/consumer-api-key/create', {
      name: 'elsewhere',
      allowedOrigins: ['http://127.0.0.2:1'],
    });
    const refused = await callFrom(page, `${h.base}/api/items`, {
      headers: { authorization: `Bearer ${elsewhere.secret as string}` },
    });
    expect(refused).toMatchObject({ status: 403, body: { code: 'origin_not_allowed' } });

    const key = await manage('/consumer-api-key/create', { name: 'any page' });
    const other = await (await browser.newContext()).newPage();
    await other.goto(`${otherOrigin}/`);
    api.received.length = 0;
    const blocked = await callFrom(other, `${h.base}/api/items`, {
      headers: { authorization: `Bearer ${key.secret as string}` },
    });
    expect(blocked.error).toMatch(/Failed to fetch/);
    expect(api.received).toEqual([]);
    await other.context().close();
  });
});
