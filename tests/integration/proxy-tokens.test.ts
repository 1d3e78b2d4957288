/**
 * Short-lived tokens (contract section 21, docs/guides/browser.md) through a real Tollgate and a real
 * backend, in both modes: a token is its key, narrowed; expiry with its leeway, every refusal (neither
 * forwarded nor charged), narrowing never widening, `sub` as the customer id, a rolled key's grace,
 * a WebSocket upgrade, verify, and the guide's Python snippet run as written.
 */
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import { mintToken } from '../../packages/client/src/generated/mint-token.js';
import { HARNESS_MODES } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const PAGE = 'https://app.example.com';
const OTHER_PAGE = 'https://other.example.com';

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

function send(port: number, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The guide's Python, as written, minting a token for `keyId` with `secret`. */
function pythonToken(secret: string, keyId: string, sub: string): string {
  const guide = readFileSync(new URL('../../docs/guides/browser.md', import.meta.url), 'utf8');
  const snippet = /```python\n([\s\S]*?)```/.exec(guide)![1]!;
  const program = `${snippet}\nimport sys\nprint(mint_token(sys.argv[1], sys.argv[2], 600, sys.argv[3]))\n`;
  return execFileSync('python3', ['-c', program, secret, keyId, sub], { encoding: 'utf8' }).trim();
}

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = new ProxyHarness();
  let stop: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(h.base + path, {
      method,
      headers: {
        authorization: `Bearer ${h.rootToken}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read response fields freely
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  async function createKey(settings: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
    const res = await call('POST', '/consumer-api-key/create', { name: 'page', ...settings });
    expect(res.status).toBe(201);
    return res.body as { id: string; secret: string };
  }

  const mint = (secret: string, keyId: string, more: Partial<Parameters<typeof mintToken>[1]> = {}) =>
    mintToken(secret, { consumerApiKeyId: keyId, expiresInSeconds: 600, nowMs: h.now, ...more });

  const withToken = (token: string, path = '/v1/things', headers: Record<string, string> = {}) =>
    send(h.port, path, { authorization: `Bearer ${token}`, ...headers });

  /** A request refused `code` with `status`, not forwarded. */
  async function refused(answer: Promise<Answer>, status: number, code: string): Promise<void> {
    const before = h.backend.received.length;
    const a = await answer;
    expect({ status: a.status, code: JSON.parse(a.body).code }).toEqual({ status, code });
    expect(h.backend.received.length).toBe(before);
  }

  beforeAll(async () => {
    stop = await mode.start(h);
    const upstreamUrl = h.config.upstreamUrl!.href.replace(/\/$/, '');
    for (const routeId of ['web', 'admin']) {
      const res = await call('POST', '/tollgate/routes', {
        routeId,
        match: { pathPrefix: `/${routeId}` },
        upstreamUrl,
      });
      expect(res.status).toBe(201);
    }
    // The route table is read again on its change: wait until the proxy routes by it (a key held to
    // the route is refused on the catch-all, and forwarded once the route takes its request).
    const key = await createKey({ allowedRouteIds: ['web'] });
    await waitFor(
      () => send(h.port, '/web/x', { 'x-api-key': key.secret }),
      (answer) => answer.status === 200,
      { timeoutMs: 5_000, everyMs: 20 },
    );
  }, 60_000);

  afterAll(async () => {
    await stop?.();
  });

  it('is its key: the backend gets the key’s own secret, and `sub` in place of the page’s customer id', async () => {
    const key = await createKey();
    const token = mint(key.secret, key.id, { subject: 'visitor-7' });
    expect(token).toMatch(/^tgt_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    const answer = await withToken(token, '/v1/things', { 'x-customer-id': 'someone-else' });
    expect(answer.status).toBe(200);
    const received = h.backend.received.at(-1)!;
    expect(received.headers['x-api-key']).toBe(key.secret);
    expect(received.headers['x-consumer-api-key-id']).toBe(key.id);
    expect(received.headers['x-customer-id']).toBe('visitor-7');
    expect(JSON.stringify(received.headers)).not.toContain('tgt_');
    // x-api-key works as well as Authorization.
    expect((await send(h.port, '/v1/things', { 'x-api-key': token })).status).toBe(200);
    await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 2,
      { timeoutMs: 5_000, everyMs: 50 },
    );
    expect((await h.usage(key.id)).customers).toEqual({ 'visitor-7': 2 });
  });

  it('expires after `exp` and 30 s of leeway: 401 token_expired, counted as failed under expired', async () => {
    const key = await createKey();
    const nowS = Math.floor(h.now / 1_000);
    const at = (exp: number) =>
      reSign(key.secret, Buffer.from(JSON.stringify({ kid: key.id, exp })).toString('base64url'));
    expect((await withToken(at(nowS - 29))).status).toBe(200);
    await refused(withToken(at(nowS - 31)), 401, 'token_expired');
    await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 2,
      { timeoutMs: 5_000, everyMs: 50 },
    );
    expect(await h.usage(key.id)).toMatchObject({ successful: 1, failed: 1, outcomes: { expired: 1 } });
  });

  it('refuses a tampered, unknown, malformed, too long-lived or too long token as invalid_api_key', async () => {
    const key = await createKey();
    const token = mint(key.secret, key.id);
    const [payload, signature] = token.slice(4).split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: (claims.exp as number) + 60 })).toString(
      'base64url',
    );
    const other = await createKey();
    const nowS = Math.floor(h.now / 1_000);
    for (const bad of [
      `tgt_${longer}.${signature}`, // the payload changed, the signature did not
      `tgt_${payload}.${signature.slice(0, -2)}AA`,
      mint(other.secret, key.id), // signed with another key's secret
      mint(key.secret, 'key_nobody'),
      'tgt_',
      `tgt_${payload}`,
      `tgt_!!.${signature}`,
      reSign(key.secret, Buffer.from('not json').toString('base64url')),
      reSign(
        key.secret,
        Buffer.from(JSON.stringify({ kid: key.id, exp: nowS + 86_400 + 31 })).toString('base64url'),
      ),
      reSign(
        key.secret,
        Buffer.from(JSON.stringify({ kid: key.id, exp: nowS + 60, sub: 'x'.repeat(1_600) })).toString(
          'base64url',
        ),
      ),
    ])
      await refused(withToken(bad), 401, 'invalid_api_key');
    // A day ahead (and its leeway) is still a token.
    expect(
      (
        await withToken(
          reSign(
            key.secret,
            Buffer.from(JSON.stringify({ kid: key.id, exp: nowS + 86_400 })).toString('base64url'),
          ),
        )
      ).status,
    ).toBe(200);
  });

  it('narrows its key’s origins and routes, never widens them', async () => {
    const key = await createKey({ allowedOrigins: [PAGE, OTHER_PAGE], allowedRouteIds: ['web'] });
    const token = mint(key.secret, key.id, { origins: [PAGE] });
    expect((await withToken(token, '/web/a', { origin: PAGE })).status).toBe(200);
    await refused(withToken(token, '/web/a', { origin: OTHER_PAGE }), 403, 'origin_not_allowed');
    await refused(withToken(token, '/web/a'), 403, 'origin_not_allowed');
    // A token naming an origin its key does not allow allows nothing more.
    const wider = mint(key.secret, key.id, { origins: ['https://evil.example.net'] });
    await refused(
      withToken(wider, '/web/a', { origin: 'https://evil.example.net' }),
      403,
      'origin_not_allowed',
    );
    await refused(withToken(wider, '/web/a', { origin: PAGE }), 403, 'origin_not_allowed');
    // Routes: the key allows web only; a token for admin opens neither.
    const admin = mint(key.secret, key.id, { routes: ['admin'] });
    await refused(withToken(admin, '/admin/a', { origin: PAGE }), 403, 'route_not_allowed');
    await refused(withToken(admin, '/web/a', { origin: PAGE }), 403, 'route_not_allowed');
  });

  it('works with a rolled key’s previous secret until its grace ends', async () => {
    const key = await createKey();
    const old = mint(key.secret, key.id);
    const rolled = await call('POST', `/consumer-api-key/${key.id}/roll`, { gracePeriodSeconds: 60 });
    expect(rolled.status).toBe(200);
    expect((await withToken(old)).status).toBe(200);
    const fresh = mint(rolled.body.secret as string, key.id);
    expect((await withToken(fresh)).status).toBe(200);
    // The backend gets the key's secret now: the new one.
    expect(h.backend.received.at(-1)!.headers['x-api-key']).toBe(rolled.body.secret);
    h.now = Date.parse(rolled.body.previousSecretExpiresAt as string) + 1;
    try {
      // The very token accepted (and remembered) during the grace, too.
      await refused(withToken(old), 401, 'invalid_api_key');
      await refused(withToken(mint(key.secret, key.id)), 401, 'invalid_api_key');
      expect((await withToken(mint(rolled.body.secret as string, key.id))).status).toBe(200);
    } finally {
      h.now = Date.UTC(2026, 0, 5, 10, 0, 0, 250);
    }
  });

  it('is accepted by verify, which decides expiry, origins and sub as the proxy does', async () => {
    const key = await createKey({ allowedOrigins: [PAGE] });
    const token = mint(key.secret, key.id, { subject: 'v-1' });
    expect((await call('POST', '/tollgate/verify', { key: token, origin: PAGE })).body).toMatchObject({
      valid: true,
      consumerApiKeyId: key.id,
    });
    expect((await call('POST', '/tollgate/verify', { key: token })).body).toMatchObject({
      valid: false,
      code: 'origin_not_allowed',
    });
    const expired = reSign(
      key.secret,
      Buffer.from(JSON.stringify({ kid: key.id, exp: Math.floor(h.now / 1_000) - 60 })).toString('base64url'),
    );
    expect((await call('POST', '/tollgate/verify', { key: expired, origin: PAGE })).body).toMatchObject({
      valid: false,
      code: 'token_expired',
    });
  });

  it('opens a WebSocket with a token; an expired one is refused before the backend', async () => {
    const key = await createKey();
    const upgrades = h.backend.upgrades.length;
    const opened = await new Promise<number | 'open'>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${h.port}/socket`, {
        headers: { authorization: `Bearer ${mint(key.secret, key.id, { subject: 'ws-visitor' })}` },
      });
      ws.once('open', () => {
        ws.close();
        resolve('open');
      });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode!));
      ws.once('error', reject);
    });
    expect(opened).toBe('open');
    const upgrade = h.backend.upgrades.at(-1)!;
    expect(h.backend.upgrades.length).toBe(upgrades + 1);
    expect([upgrade.headers['x-api-key'], upgrade.headers['x-customer-id']]).toEqual([
      key.secret,
      'ws-visitor',
    ]);
    const expired = reSign(
      key.secret,
      Buffer.from(JSON.stringify({ kid: key.id, exp: Math.floor(h.now / 1_000) - 60 })).toString('base64url'),
    );
    const refusedWith = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${h.port}/socket`, {
        headers: { authorization: `Bearer ${expired}` },
      });
      ws.once('open', () => reject(new Error('an expired token opened a socket')));
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode!));
      ws.once('error', reject);
    });
    expect(refusedWith).toBe(401);
    expect(h.backend.upgrades.length).toBe(upgrades + 1);
  });

  it('counts a wrong signature on a key it knows against the address’s budget of failures', async () => {
    // A failure window of its own, an hour after the tests before.
    h.now = Date.UTC(2026, 0, 5, 11, 0, 0, 250);
    const key = await createKey();
    const token = mint(key.secret, key.id);
    expect((await withToken(token)).status).toBe(200);
    const payload = token.slice(4).split('.')[0]!;
    const forged = (guess: number) =>
      `tgt_${payload}.${createHmac('sha256', `guess-${guess}`).update(payload).digest('base64url')}`;
    // The production throttle (docs/security.md): 100 failures per client address per minute.
    for (let guess = 0; guess < 100; guess++) await refused(withToken(forged(guess)), 401, 'invalid_api_key');
    await refused(withToken(forged(100)), 429, 'too_many_failed_attempts');
    // The key's own tokens keep working from the same address.
    expect((await withToken(token)).status).toBe(200);
    h.now = Date.UTC(2026, 0, 5, 10, 0, 0, 250);
  });

  it('takes a token minted by the guide’s Python', async () => {
    const key = await createKey();
    // The Python reads the real clock: a token of ten minutes from now is in force on the harness's.
    h.realTime = true;
    try {
      const token = pythonToken(key.secret, key.id, 'from-python');
      expect(token).toMatch(/^tgt_/);
      expect((await withToken(token)).status).toBe(200);
      expect(h.backend.received.at(-1)!.headers['x-customer-id']).toBe('from-python');
    } finally {
      h.realTime = false;
    }
  });
});

/** A token of `payload` (base64url) signed with the signing key of `secret`, as section 21 says. */
function reSign(secret: string, payload: string): string {
  // mintToken signs what it builds; a test's own payloads are signed here, by the same algorithm.
  const signingKey = createHmac('sha256', secret).update('tollgate-token-v1').digest();
  return `tgt_${payload}.${createHmac('sha256', signingKey).update(payload).digest('base64url')}`;
}
