import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import { closeDatabase, ProxyHarness, rawRequest } from '../helpers/proxy-harness.js';

const START_MS = 120_000;

afterAll(closeDatabase);

/** Opens a WebSocket through Tollgate: the open socket, or the HTTP answer that refused it. */
function open(
  url: string,
  headers: Record<string, string>,
): Promise<
  | { ws: WebSocket; upgrade: IncomingMessage }
  | { status: number; headers: IncomingMessage['headers']; body: string }
> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('upgrade', (upgrade) => ws.once('open', () => resolve({ ws, upgrade })));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    ws.once('error', reject);
  });
}

function echo(ws: WebSocket, message: string): Promise<string> {
  return new Promise((resolve) => {
    ws.once('message', (data) => resolve(String(data)));
    ws.send(message);
  });
}

describe('proxy: WebSocket upgrades', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start({ upstreamPath: '/api' }), START_MS);
  afterAll(() => h.stop());

  it('authenticates, then proxies the upgrade with the same header rules as plain requests', async () => {
    const key = await h.createKey({ limit: 10, period: 'hour' });
    const result = await open(`ws://127.0.0.1:${h.port}/socket?room=7`, {
      authorization: `Bearer ${key.secret}`,
      'x-consumer-api-key-id': 'key_forged',
      'x-request-id': 'ws-1',
      'x-customer-id': 'acme',
    });
    if (!('ws' in result)) throw new Error(`upgrade refused: ${result.status} ${result.body}`);
    expect(await echo(result.ws, 'hello through tollgate')).toBe('hello through tollgate');
    expect(result.upgrade.headers['x-request-id']).toBe('ws-1');
    expect(result.upgrade.headers['ratelimit-policy']).toBe('"hour";q=10;w=3600');
    expect(result.upgrade.headers['ratelimit']).toBe('"hour";r=9;t=3600');
    result.ws.close();

    const got = h.backend.upgrades.at(-1)!;
    expect(got.url).toBe('/api/socket?room=7');
    expect(got.headers['x-api-key']).toBe(key.secret);
    expect(got.headers['x-consumer-api-key-id']).toBe(key.id);
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(got.headers.upgrade).toBe('websocket');
    expect(got.headers['x-request-id']).toBe('ws-1');
    expect(await h.usage(key.id)).toMatchObject({
      requests: 1,
      successful: 1,
      failed: 0,
      endpoints: ['/socket'],
      cost: 1,
      statusClasses: { '2xx': 1 },
    });
  });

  it('answers an unauthenticated upgrade with a 401 JSON response and closes the socket', async () => {
    const before = h.backend.upgrades.length;
    const missing = await open(`ws://127.0.0.1:${h.port}/socket`, {});
    expect(missing).toMatchObject({ status: 401 });
    expect(JSON.parse((missing as { body: string }).body)).toEqual({
      error: expect.any(String),
      code: 'missing_api_key',
    });

    const invalid = await open(`ws://127.0.0.1:${h.port}/socket`, { 'x-api-key': 'tg_' + 'x'.repeat(43) });
    expect(invalid).toMatchObject({ status: 401 });
    expect(JSON.parse((invalid as { body: string }).body)).toMatchObject({ code: 'invalid_api_key' });
    expect(h.backend.upgrades).toHaveLength(before);

    const raw = await rawRequest(
      h.port,
      'GET /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    expect(raw).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);
    expect(raw).toContain('connection: close');
    expect(raw).toContain('"code":"missing_api_key"');
  });

  it('limits upgrades like any request: over the limit, 429 with the documented body and headers', async () => {
    const key = await h.createKey({ limit: 1, period: 'day' });
    const first = await open(`ws://127.0.0.1:${h.port}/socket`, { authorization: `Bearer ${key.secret}` });
    expect('ws' in first).toBe(true);
    if ('ws' in first) first.ws.close();
    const before = h.backend.upgrades.length;
    const second = await open(`ws://127.0.0.1:${h.port}/socket`, { authorization: `Bearer ${key.secret}` });
    if ('ws' in second) throw new Error('second upgrade was admitted');
    expect(second.status).toBe(429);
    expect(JSON.parse(second.body)).toEqual({
      error: 'Rate limit exceeded',
      code: 'rate_limit_exceeded',
      limit: 1,
      period: 'day',
      remaining: 0,
      resetTime: '2026-01-06T00:00:00Z',
      name: 'day',
      scope: 'key',
      per: 'key',
    });
    expect(second.headers['retry-after']).toBe(String(14 * 3600));
    expect(second.headers['ratelimit']).toBe(`"day";r=0;t=${14 * 3600}`);
    expect(h.backend.upgrades).toHaveLength(before);
    expect(await h.usage(key.id)).toMatchObject({
      requests: 2,
      successful: 1,
      failed: 1,
      cost: 1,
      outcomes: { rateLimited: 1 },
    });
  });

  it('refuses upgrades on dot-segment paths and management routes', async () => {
    const key = await h.createKey();
    // Raw: a WebSocket client would normalise the dot segment away before sending.
    const dotted = await rawRequest(
      h.port,
      `GET /a/%2e%2e/socket HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.secret}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    );
    expect(dotted).toMatch(/^HTTP\/1\.1 400 /);
    expect(dotted).toContain('"code":"invalid_request_target"');
    const management = await open(`ws://127.0.0.1:${h.port}/consumer-api-key`, {
      authorization: `Bearer ${key.secret}`,
    });
    expect(management).toMatchObject({ status: 404 });
  });
});

describe('proxy: WebSocket connections at shutdown', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start(), START_MS);
  afterAll(() => h.stop());

  it('closes open WebSocket connections when the service shuts down (SIGTERM), not at the drain deadline', async () => {
    const key = await h.createKey();
    const result = await open(`ws://127.0.0.1:${h.port}/socket`, { authorization: `Bearer ${key.secret}` });
    if (!('ws' in result)) throw new Error('upgrade refused');
    const closed = new Promise<void>((resolve) => result.ws.once('close', () => resolve()));
    const started = Date.now();
    await h.stop();
    await closed;
    expect(result.ws.readyState).toBe(WebSocket.CLOSED);
    expect(Date.now() - started).toBeLessThan(h.config.shutdownTimeoutMs);
  });
});

describe('proxy: WebSocket upgrade to a backend that answers plain HTTP', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start(), START_MS);
  afterAll(() => h.stop());

  it.each([
    [200, { requests: 1, successful: 1, failed: 0 }],
    [404, { requests: 1, successful: 0, failed: 1 }],
  ])('passes a %s on and counts it like any answer of that status', async (status, usage) => {
    h.backend.plainUpgradeStatus = status;
    const key = await h.createKey();
    const result = await open(`ws://127.0.0.1:${h.port}/plain`, { authorization: `Bearer ${key.secret}` });
    expect(result).toMatchObject({ status, body: 'plain' });
    expect(await h.usage(key.id)).toMatchObject(usage);
  });
});

describe('proxy: WebSocket upgrade to a backend that never answers', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start({ upstreamTimeoutMs: 300 }), START_MS);
  afterAll(() => h.stop());

  it('answers 504 gateway_timeout after UPSTREAM_TIMEOUT_MS', async () => {
    h.backend.hangUpgrades = true;
    const key = await h.createKey();
    const started = Date.now();
    const result = await open(`ws://127.0.0.1:${h.port}/socket`, { authorization: `Bearer ${key.secret}` });
    expect(result).toMatchObject({ status: 504 });
    expect(JSON.parse((result as { body: string }).body)).toMatchObject({ code: 'gateway_timeout' });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await h.usage(key.id)).toMatchObject({
      requests: 1,
      failed: 1,
      outcomes: { backendUnreachable: 1 },
    });
  });
});

describe('proxy: WebSocket upgrade to an unreachable backend', () => {
  const h = new ProxyHarness();
  beforeAll(() => h.start({ deadBackend: true }), START_MS);
  afterAll(() => h.stop());

  it('answers 502 bad_gateway and counts the upgrade as failed', async () => {
    const key = await h.createKey();
    const result = await open(`ws://127.0.0.1:${h.port}/socket`, { authorization: `Bearer ${key.secret}` });
    expect(result).toMatchObject({ status: 502 });
    expect(JSON.parse((result as { body: string }).body)).toMatchObject({ code: 'bad_gateway' });
    expect(await h.usage(key.id)).toMatchObject({
      requests: 1,
      failed: 1,
      statusClasses: { '5xx': 1 },
      outcomes: { backendUnreachable: 1 },
    });
  });
});
