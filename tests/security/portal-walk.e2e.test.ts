/**
 * The developer portal through the built server, in both modes (contract section 22): a customer signs
 * in with a link and does everything the portal offers for their consumer, each change audited with
 * the portal actor and delivered to webhooks as the management API's would be, and mints tokens of
 * its keys that the gateway takes as the key (the token itself written nowhere); then an attacker's walk
 * replays every call of the portal's API with another consumer's ids, without the cookie, cross-site
 * (another Origin, another port of the same host, no CSRF token, another session's token), after
 * sign-out and after the session was ended by an administrator: 404, 401 or 403, and nothing changed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startBackend, type Backend } from '../e2e/helpers/backend.js';
import { MODES, type Deployment } from '../e2e/helpers/modes.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from '../e2e/helpers/tollgate.js';
import { waitFor } from '../helpers/poll.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { PortalUser, type Tamper } from '../helpers/portal-user.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

let backend: Backend;
let receiver: WebhookReceiver;
const running: Tollgate[] = [];
/** Every sign-in link handed out: their codes must never reach a log. */
const links: string[] = [];

beforeAll(async () => {
  [backend, receiver] = await Promise.all([startBackend(), WebhookReceiver.start()]);
}, 30_000);

afterAll(async () => {
  await Promise.all(running.map((t) => t.stop()));
  await Promise.all([backend?.close(), receiver?.close()]);
  expectNoSecretsLogged();
  const codes = links.map((url) => new URL(url).searchParams.get('code')!);
  const output = running.flatMap((t) => t.output);
  expect(codes.filter((code) => output.some((line) => line.includes(code)))).toEqual([]);
}, 60_000);

/** A key of the proxy: status of one proxied request with it. */
async function proxied(t: Tollgate, secret: string): Promise<number> {
  return (await fetch(`${t.url}/v1/items`, { headers: { 'x-api-key': secret } })).status;
}

describe.each(MODES)('$name', (mode) => {
  let deployment: Deployment;
  let t: Tollgate;
  let consumerA: string;
  let consumerB: string;
  let keyA: { id: string; secret: string };
  let keyB: { id: string; secret: string };
  let alice: PortalUser;
  /** Tollgate's clock: a key's expiry is reached by moving it, never by waiting. */
  let clock: TestClock;

  async function link(consumerId: string, user: object = { id: 'alice', email: 'alice@a.example' }) {
    const res = await t.admin('POST', '/tollgate/portal/sessions', { consumerId, user });
    expect(res.status).toBe(201);
    links.push(res.body.url as string);
    return res.body as { sessionId: string; url: string; expiresAt: string };
  }

  async function signedIn(consumerId: string, user?: object): Promise<PortalUser> {
    const portalUser = new PortalUser(t.url);
    expect((await portalUser.signIn((await link(consumerId, user)).url)).status).toBe(303);
    return portalUser;
  }

  /**
   * Everything an attacker might change, as an administrator reads it (less what requests move on
   * their own meanwhile: a key's lastUsedAt, a consumer's usage).
   */
  async function state(): Promise<unknown> {
    const [keysA, keysB, a, b, audit, sessions] = await Promise.all([
      t.admin('GET', `/consumer-api-key?consumerId=${consumerA}`),
      t.admin('GET', `/consumer-api-key?consumerId=${consumerB}`),
      t.admin('GET', `/tollgate/consumers/${consumerA}`),
      t.admin('GET', `/tollgate/consumers/${consumerB}`),
      t.admin('GET', '/tollgate/audit-log?limit=1000'),
      t.admin('GET', '/tollgate/portal/sessions'),
    ]);
    const keys = ({ body }: { body: { apiKeys: object[] } }) =>
      body.apiKeys.map((key) => ({ ...key, lastUsedAt: undefined }));
    const consumer = ({ body }: { body: object }) => ({ ...body, usage: undefined });
    return [keys(keysA), keys(keysB), consumer(a), consumer(b), audit.body, sessions.body];
  }

  beforeAll(async () => {
    deployment = await mode.deploy();
    // The test's own address is a proxy it trusts: X-Forwarded-Proto then says how the browser came.
    clock = new TestClock();
    t = await startTollgate({
      ...deployment.env,
      ...clock.env,
      UPSTREAM_URL: backend.url,
      TRUST_PROXY: '127.0.0.1',
    });
    running.push(t);
    for (const [rateLimitId, limit] of [
      ['basic', 1000],
      ['pro', 5000],
      ['internal', 100000],
    ] as const)
      expect(
        (await t.admin('POST', '/rate-limit/create', { rateLimitId, limit, period: 'minute' })).status,
      ).toBe(201);
    consumerA = (await t.admin('POST', '/tollgate/consumers', { name: 'Acme', rateLimitId: 'basic' })).body
      .consumerId;
    consumerB = (await t.admin('POST', '/tollgate/consumers', { name: 'Bravo', rateLimitId: 'basic' })).body
      .consumerId;
    const key = async (consumerId: string) => {
      const res = await t.admin('POST', '/consumer-api-key/create', { name: 'first', consumerId });
      return { id: res.body.id as string, secret: res.body.secret as string };
    };
    [keyA, keyB] = [await key(consumerA), await key(consumerB)];
    const hook = await t.admin('POST', '/tollgate/webhooks', {
      url: receiver.url,
      events: ['key.created', 'key.updated', 'key.rolled', 'key.deleted', 'consumer.updated'],
    });
    receiver.secret = hook.body.secret;
    const settings = await t.admin('PATCH', '/tollgate/portal/settings', {
      enabled: true,
      title: 'Acme API',
      accentColor: '#0055aa',
      maxKeysPerConsumer: 3,
      publicPlans: ['basic', 'pro'],
    });
    expect(settings.status).toBe(200);
    alice = await signedIn(consumerA);
  }, 120_000);

  afterAll(async () => {
    await t?.stop();
    await deployment?.dispose();
  }, 60_000);

  it('a sign-in link works once, sets an HttpOnly SameSite=Lax cookie of the portal path, and leaves for a clean URL', async () => {
    const { url } = await link(consumerA);
    const user = new PortalUser(t.url);
    const first = await user.signIn(url);
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/tollgate/portal/');
    expect(user.setCookie).toMatch(
      /^tollgate_portal=tgp_[A-Za-z0-9_-]{43}; Path=\/tollgate\/portal; Max-Age=\d+; HttpOnly; SameSite=Lax$/,
    );
    expect((await user.call('GET', '/me')).body).toMatchObject({
      user: { id: 'alice', email: 'alice@a.example' },
      consumer: { id: consumerA, name: 'Acme' },
      branding: { title: 'Acme API', accentColor: '#0055aa' },
    });
    // Used: the same link again is refused, and signs nobody in.
    const again = new PortalUser(t.url);
    const second = await again.signIn(url);
    expect(second.status).toBe(400);
    expect(second.text).toContain('This sign-in link does not work');
    expect(again.cookie).toBeUndefined();

    // Over HTTPS (as a trusted proxy says), the cookie is Secure.
    const secure = new PortalUser(t.url);
    await secure.signIn((await link(consumerA)).url, { 'x-forwarded-proto': 'https' });
    expect(secure.setCookie).toMatch(/; Secure$/);
  });

  it('the customer manages their own keys, each change audited as the portal user and sent to webhooks', async () => {
    const listed = await alice.call('GET', '/keys');
    expect(listed.status).toBe(200);
    expect(listed.body.maxKeys).toBe(3);
    expect(listed.body.keys).toEqual([
      expect.objectContaining({
        id: keyA.id,
        name: 'first',
        enabled: true,
        maskedSecret: `tg_…${keyA.secret.slice(-4)}`,
      }),
    ]);
    expect(listed.text).not.toContain(keyA.secret);

    const created = await alice.call('POST', '/keys', { name: 'ci', allowedAddresses: ['127.0.0.1'] });
    expect(created.status).toBe(201);
    const secret = created.body.secret as string;
    expect(created.body).toMatchObject({
      name: 'ci',
      allowedAddresses: ['127.0.0.1'],
      maskedSecret: `tg_…${secret.slice(-4)}`,
    });
    const id = created.body.id as string;
    expect(await proxied(t, secret)).toBe(200);
    // Shown once: never again.
    expect((await alice.call('GET', `/keys/${id}`)).text).not.toContain(secret);

    expect((await alice.call('PATCH', `/keys/${id}`, { name: 'ci-2', enabled: false })).body).toMatchObject({
      name: 'ci-2',
      enabled: false,
    });
    expect(await proxied(t, secret)).toBe(403);
    await alice.call('PATCH', `/keys/${id}`, { enabled: true, allowedOrigins: ['https://app.acme.example'] });
    expect(await proxied(t, secret)).toBe(403);
    await alice.call('PATCH', `/keys/${id}`, { allowedOrigins: null });
    expect(await proxied(t, secret)).toBe(200);

    const rolled = await alice.call('POST', `/keys/${id}/roll`, { gracePeriodSeconds: 3600 });
    expect(rolled.status).toBe(200);
    expect(await proxied(t, rolled.body.secret as string)).toBe(200);
    expect(await proxied(t, secret)).toBe(200);
    expect((await alice.call('POST', `/keys/${id}/roll`, { gracePeriodSeconds: 86_401 })).status).toBe(400);

    // Past maxKeysPerConsumer (3): refused, nothing created.
    expect((await alice.call('POST', '/keys', { name: 'third' })).status).toBe(201);
    const over = await alice.call('POST', '/keys', { name: 'fourth' });
    expect({ status: over.status, code: over.body.code }).toEqual({ status: 409, code: 'key_limit_reached' });
    expect((await alice.call('GET', '/keys')).body.keys).toHaveLength(3);

    expect((await alice.call('DELETE', `/keys/${id}`)).status).toBe(200);
    expect(await proxied(t, rolled.body.secret as string)).toBe(401);

    const audit = await t.admin('GET', `/tollgate/audit-log?targetId=${id}`);
    expect(audit.body.auditLog.map((e: { action: string }) => e.action).reverse()).toEqual([
      'key.create',
      'key.update',
      'key.update',
      'key.update',
      'key.roll',
      'key.delete',
    ]);
    for (const entry of audit.body.auditLog)
      expect(entry.actor).toEqual({
        type: 'portal',
        id: 'alice',
        name: 'alice@a.example',
        consumerId: consumerA,
      });
    const events = await waitFor(
      () => Promise.resolve([...receiver.events.values()].filter((e) => e.data.consumerApiKeyId === id)),
      (found) => found.length === 6,
      { timeoutMs: 20_000, everyMs: 200 },
    );
    // Deliveries may arrive in any order (each retried on its own).
    expect(events.value.map((e) => e.type).sort()).toEqual([
      'key.created',
      'key.deleted',
      'key.rolled',
      'key.updated',
      'key.updated',
      'key.updated',
    ]);
  });

  it('mints a token of its own key, which the gateway takes as the key; the minting is audited, the token written nowhere', async () => {
    const minted = await alice.call('POST', `/keys/${keyA.id}/tokens`, {
      expiresInSeconds: 600,
      subject: 'visitor-7',
    });
    expect(minted.status).toBe(201);
    const token = minted.body.token as string;
    expect(token).toMatch(/^tgt_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(minted.body.expiresAt as string)).toBeGreaterThan(clock.now() + 590_000);
    expect(Date.parse(minted.body.expiresAt as string)).toBeLessThanOrEqual(clock.now() + 600_000);

    // Through the proxy it is the key: the backend answers, and gets the key's secret and the visitor.
    const answer = await fetch(`${t.url}/v1/items?via=token`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ method: 'GET', url: '/v1/items?via=token' });
    const forwarded = backend.received.findLast((r) => r.url === '/v1/items?via=token')!;
    expect(forwarded.headers['x-api-key']).toBe(keyA.secret);
    expect(forwarded.headers['x-customer-id']).toBe('visitor-7');

    // Without a body: an hour.
    const hour = await alice.call('POST', `/keys/${keyA.id}/tokens`);
    expect(hour.status).toBe(201);
    expect(Date.parse(hour.body.expiresAt as string)).toBeGreaterThan(clock.now() + 3_590_000);
    expect(await proxied(t, hour.body.token as string)).toBe(200);

    // Audited as the portal user, with what the token allows and never the token.
    const audit = await t.admin('GET', `/tollgate/audit-log?targetId=${keyA.id}&action=key.mint_token`);
    expect(audit.body.auditLog).toHaveLength(2);
    expect(audit.body.auditLog[1]).toMatchObject({
      action: 'key.mint_token',
      target: { type: 'key', id: keyA.id },
      actor: { type: 'portal', id: 'alice', name: 'alice@a.example', consumerId: consumerA },
      changes: {
        before: null,
        after: { expiresAt: minted.body.expiresAt, subject: 'visitor-7', origins: null, routes: null },
      },
    });
    const written = [JSON.stringify(audit.body), ...t.output].join('\n');
    for (const credential of [token, hour.body.token as string])
      expect(written).not.toContain(credential.slice(credential.indexOf('.')));

    // Out of range, or wider than a token can be: refused, nothing minted.
    for (const body of [
      { expiresInSeconds: 86_401 },
      { expiresInSeconds: 0 },
      { origins: ['*'] },
      { subject: '' },
      // A subject is a customer id: no control character (contract section 32), 200 code points at most.
      { subject: 'a\u0000b' },
      { subject: 'visitor\r\nx-injected: 1' },
      { subject: '\u007f' },
      { subject: '😀'.repeat(201) },
      { consumerApiKeyId: keyB.id },
    ]) {
      const refused = await alice.call('POST', `/keys/${keyA.id}/tokens`, body);
      expect({ body, status: refused.status, code: refused.body.code }).toEqual({
        body,
        status: 400,
        code: 'validation_failed',
      });
    }
    // 200 code points outside the BMP (400 UTF-16 units): minted, and the proxy takes what the portal mints.
    const wide = '😀'.repeat(200);
    const wideToken = await alice.call('POST', `/keys/${keyA.id}/tokens`, { subject: wide });
    expect(wideToken.status).toBe(201);
    const viaWide = await fetch(`${t.url}/v1/items?via=wide`, {
      headers: { authorization: `Bearer ${wideToken.body.token as string}` },
    });
    expect(viaWide.status).toBe(200);
    const wideHeader = backend.received.findLast((r) => r.url === '/v1/items?via=wide')!.headers[
      'x-customer-id'
    ];
    expect(Buffer.from(wideHeader as string, 'latin1').toString('utf8')).toBe(wide);

    // A disabled key and an expired one mint nothing, and say why.
    const spare = await t.admin('POST', '/consumer-api-key/create', {
      name: 'spare',
      consumerId: consumerA,
      expiresAt: new Date(clock.now() + 5 * MINUTE_MS).toISOString().replace(/\.\d+Z$/, 'Z'),
    });
    expect(spare.status).toBe(201);
    expect((await t.admin('PATCH', `/consumer-api-key/${spare.body.id}`, { enabled: false })).status).toBe(
      200,
    );
    const disabled = await alice.call('POST', `/keys/${spare.body.id}/tokens`);
    expect({ status: disabled.status, code: disabled.body.code }).toEqual({
      status: 409,
      code: 'key_not_usable',
    });
    expect(disabled.body.error).toContain('disabled');
    expect((await t.admin('PATCH', `/consumer-api-key/${spare.body.id}`, { enabled: true })).status).toBe(
      200,
    );
    clock.advance(6 * MINUTE_MS);
    const expired = await alice.call('POST', `/keys/${spare.body.id}/tokens`);
    expect({ status: expired.status, code: expired.body.code }).toEqual({
      status: 409,
      code: 'key_not_usable',
    });
    expect(expired.body.error).toContain('expired');
    expect((await t.admin('DELETE', `/consumer-api-key/${spare.body.id}`)).status).toBe(200);
    expect(
      (await t.admin('GET', `/tollgate/audit-log?targetId=${spare.body.id}&action=key.mint_token`)).body
        .auditLog,
    ).toEqual([]);
  });

  it('creates at the same instant never pass maxKeysPerConsumer', async () => {
    const consumerId = (await t.admin('POST', '/tollgate/consumers', { name: 'Rush' })).body
      .consumerId as string;
    const rushing = await signedIn(consumerId);
    const statuses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        rushing.call('POST', '/keys', { name: `k${i}` }).then((r) => r.status),
      ),
    );
    expect(statuses.sort()).toEqual([201, 201, 201, 409, 409, 409, 409, 409]);
    expect((await t.admin('GET', `/consumer-api-key?consumerId=${consumerId}`)).body.apiKeys).toHaveLength(3);
  });

  it('usage, failures (JSON and CSV), the plan with what remains, and a switch between public plans only', async () => {
    expect(await proxied(t, keyA.secret)).toBe(200);
    const usage = await waitFor(
      () => alice.call('GET', '/usage?granularity=hour'),
      (res) => (res.body?.buckets ?? []).some((b: { requests: number }) => b.requests >= 1),
      { timeoutMs: 10_000, everyMs: 200 },
    );
    expect(usage.value.body).toMatchObject({ consumerId: consumerA });
    const csv = await alice.call('GET', '/usage?granularity=hour', undefined, { accept: 'text/csv' });
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect((await alice.call('GET', `/keys/${keyA.id}/usage`)).body).toMatchObject({
      consumerApiKeyId: keyA.id,
    });
    expect((await alice.call('GET', '/failures')).body).toMatchObject({
      failures: expect.any(Array),
      leftOut: 0,
    });
    expect((await alice.call('GET', `/keys/${keyA.id}/failures`)).status).toBe(200);

    const plan = await alice.call('GET', '/plan');
    expect(plan.body).toMatchObject({
      current: { rateLimitId: 'basic', state: { limit: 1000, remaining: expect.any(Number) } },
      publicPlans: [{ rateLimitId: 'basic' }, { rateLimitId: 'pro' }],
    });
    const switched = await alice.call('POST', '/plan', { rateLimitId: 'pro' });
    expect(switched.body.current).toMatchObject({ rateLimitId: 'pro', state: { limit: 5000 } });
    expect((await t.admin('GET', `/tollgate/consumers/${consumerA}`)).body.rateLimitId).toBe('pro');
    const notPublic = await alice.call('POST', '/plan', { rateLimitId: 'internal' });
    expect({ status: notPublic.status, code: notPublic.body.code }).toEqual({
      status: 404,
      code: 'rate_limit_not_found',
    });
    expect((await t.admin('GET', `/tollgate/consumers/${consumerA}`)).body.rateLimitId).toBe('pro');
    const [entry] = (await t.admin('GET', `/tollgate/audit-log?targetId=${consumerA}`)).body.auditLog;
    expect(entry).toMatchObject({
      action: 'consumer.update',
      actor: { type: 'portal', consumerId: consumerA },
    });
  });

  /** Every call of the portal's API, `key` standing for the key id it names. */
  const calls = (key: string): [string, string, unknown?][] => [
    ['GET', '/me'],
    ['GET', '/keys'],
    ['POST', '/keys', { name: 'sneaky' }],
    ['GET', `/keys/${key}`],
    ['PATCH', `/keys/${key}`, { name: 'pwned', enabled: false, allowedOrigins: ['https://evil.example'] }],
    ['POST', `/keys/${key}/roll`, {}],
    ['POST', `/keys/${key}/tokens`, {}],
    ['DELETE', `/keys/${key}`],
    ['GET', '/usage'],
    ['GET', `/keys/${key}/usage`],
    ['GET', '/failures'],
    ['GET', `/keys/${key}/failures`],
    ['GET', '/plan'],
    ['POST', '/plan', { rateLimitId: 'basic' }],
    ['POST', '/sign-out'],
  ];
  const READS = new Set(['GET']);

  it("another consumer's key ids answer 404 to every call, and nothing changes", async () => {
    const before = await state();
    for (const [method, path, body] of calls(keyB.id).filter(([, path]) => path.includes(keyB.id))) {
      const res = await alice.call(method, path, body);
      expect({ call: `${method} ${path}`, status: res.status, code: res.body?.code }).toEqual({
        call: `${method} ${path}`,
        status: 404,
        code: 'key_not_found',
      });
    }
    expect(await state()).toEqual(before);
    expect(await proxied(t, keyB.secret)).toBe(200);
  });

  it('cross-site writes are refused with 403 and change nothing; reads need no proof', async () => {
    const port = Number(new URL(t.url).port);
    const bob = await signedIn(consumerB, { id: 'bob' });
    const tampers: [string, Tamper][] = [
      ['another site', { origin: 'https://evil.example' }],
      [
        'another port of the same host',
        { origin: `http://127.0.0.1:${port === 65535 ? port - 1 : port + 1}` },
      ],
      ['no Origin', { origin: null }],
      ['no CSRF token', { csrf: null }],
      ["another session's CSRF token", { csrf: bob.csrf! }],
    ];
    const before = await state();
    for (const [how, tamper] of tampers)
      for (const [method, path, body] of calls(keyA.id).filter(([method]) => !READS.has(method))) {
        const res = await alice.call(method, path, body, tamper);
        expect({ how, call: `${method} ${path}`, status: res.status, code: res.body?.code }).toEqual({
          how,
          call: `${method} ${path}`,
          status: 403,
          code: 'cross_site_request',
        });
      }
    expect(await state()).toEqual(before);
    expect((await alice.call('GET', '/keys', undefined, { origin: 'https://evil.example' })).status).toBe(
      200,
    );
  });

  it("hostile bodies and ids are refused with the contract's status, and change nothing", async () => {
    const before = await state();
    const refusals: [string, string, unknown, number, string][] = [
      // The consumer, the plan, metadata and credits are not the portal user's to set.
      ['POST', '/keys', { name: 'k', consumerId: consumerB }, 400, 'validation_failed'],
      ['POST', '/keys', { name: 'k', rateLimitId: 'internal' }, 400, 'validation_failed'],
      ['PATCH', `/keys/${keyA.id}`, { consumerId: consumerB }, 400, 'validation_failed'],
      ['PATCH', `/keys/${keyA.id}`, { metadata: { tier: 'gold' } }, 400, 'validation_failed'],
      ['PATCH', `/keys/${keyA.id}`, { allowedOrigins: ['*'] }, 400, 'validation_failed'],
      ['POST', '/plan', { rateLimitId: 'internal', consumerId: consumerB }, 400, 'validation_failed'],
      ['GET', '/keys/%E0', undefined, 404, 'key_not_found'],
      ['PUT', '/keys', undefined, 405, 'method_not_allowed'],
    ];
    for (const [method, path, body, status, code] of refusals) {
      const res = await alice.call(method, path, body);
      expect({ call: `${method} ${path}`, status: res.status, code: res.body?.code }).toEqual({
        call: `${method} ${path}`,
        status,
        code,
      });
    }
    const notJson = await alice.call('POST', '/keys', undefined, {
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
    expect(await state()).toEqual(before);
  });

  it('without the cookie every call is 401, and the cookie opens nothing of the management API', async () => {
    const before = await state();
    for (const [method, path, body] of calls(keyA.id)) {
      const res = await alice.call(method, path, body, { cookie: null });
      expect({ call: `${method} ${path}`, status: res.status, code: res.body?.code }).toEqual({
        call: `${method} ${path}`,
        status: 401,
        code: 'not_signed_in',
      });
    }
    for (const [method, path] of [
      ['GET', '/tollgate/portal/settings'],
      ['GET', '/tollgate/portal/sessions'],
      ['GET', `/consumer-api-key/${keyA.id}`],
      ['GET', '/tollgate/consumers'],
      ['PATCH', '/tollgate/portal/settings'],
    ] as const) {
      const res = await alice.raw(method, path, method === 'PATCH' ? { title: 'pwned' } : undefined);
      expect({ path, status: res.status }).toEqual({ path, status: 401 });
    }
    expect(await state()).toEqual(before);
  });

  it('after sign-out, after an administrator ends the session, and after the consumer is deleted: 401 everywhere', async () => {
    const leaving = await signedIn(consumerA);
    expect((await leaving.call('POST', '/sign-out')).headers.get('set-cookie')).toMatch(
      /^tollgate_portal=; Path=\/tollgate\/portal; Max-Age=0; HttpOnly; SameSite=Lax$/,
    );
    const ended = await signedIn(consumerA);
    const sessions = (await t.admin('GET', `/tollgate/portal/sessions?consumerId=${consumerA}`)).body
      .sessions;
    const newest = sessions.find((s: { signedIn: boolean }) => s.signedIn);
    expect((await t.admin('DELETE', `/tollgate/portal/sessions/${newest.sessionId}`)).status).toBe(200);

    const before = await state();
    for (const user of [leaving, ended])
      for (const [method, path, body] of calls(keyA.id)) {
        const res = await user.call(method, path, body);
        expect({ call: `${method} ${path}`, status: res.status }).toEqual({
          call: `${method} ${path}`,
          status: 401,
        });
      }
    expect(await state()).toEqual(before);

    const doomed = (await t.admin('POST', '/tollgate/consumers', { name: 'Doomed' })).body
      .consumerId as string;
    const member = await signedIn(doomed);
    expect((await member.call('GET', '/keys')).status).toBe(200);
    expect((await t.admin('DELETE', `/tollgate/consumers/${doomed}`)).status).toBe(200);
    expect((await member.call('GET', '/keys')).status).toBe(401);
  });

  it('more than 20 failed sign-in codes a minute from one address answer 429', async () => {
    const from = { 'x-forwarded-for': '203.0.113.77' };
    // The budget is per minute: start the 22 attempts at the top of one, so none lands in the next.
    clock.after(MINUTE_MS, 0);
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++)
      statuses.push(
        (await new PortalUser(t.url).signIn(`${t.url}/tollgate/portal/sign-in?code=${'x'.repeat(43)}`, from))
          .status,
      );
    expect(statuses).toEqual([...Array<number>(20).fill(400), 429]);
    // Even a good link, from that address, this minute.
    const refused = await new PortalUser(t.url).signIn((await link(consumerA)).url, from);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('while the portal is off, its sign-in and API answer 404', async () => {
    const { url } = await link(consumerA);
    await t.admin('PATCH', '/tollgate/portal/settings', { enabled: false });
    try {
      expect((await alice.call('GET', '/keys')).status).toBe(404);
      expect((await new PortalUser(t.url).signIn(url)).status).toBe(404);
      expect(
        (await t.admin('POST', '/tollgate/portal/sessions', { consumerId: consumerA, user: { id: 'x' } }))
          .status,
      ).toBe(409);
    } finally {
      await t.admin('PATCH', '/tollgate/portal/settings', { enabled: true });
    }
  });
});

describe('under MANAGEMENT_PREFIX, with an API reference fetched from the team', () => {
  let t: Tollgate;
  let reference: Server;
  let referenceUrl: string;
  const DOCUMENT = { openapi: '3.1.0', info: { title: 'Globex API', version: '1' }, paths: {} };

  beforeAll(async () => {
    reference = createServer((req, res) => {
      if (req.url === '/openapi.json')
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(DOCUMENT));
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => reference.listen(0, '127.0.0.1', resolve));
    referenceUrl = `http://127.0.0.1:${(reference.address() as AddressInfo).port}`;
    // The team's site is this test's server, on loopback over http: both allowed by name.
    t = await startTollgate({
      UPSTREAM_URL: backend.url,
      MANAGEMENT_PREFIX: '/admin',
      PORTAL_REFERENCE_ALLOW_HTTP: 'true',
      PORTAL_REFERENCE_ALLOW_PRIVATE: 'true',
    });
    running.push(t);
  }, 60_000);

  afterAll(async () => {
    await t?.stop();
    await new Promise((resolve) => reference.close(resolve));
  });

  it('every portal path carries the prefix, and the reference is served from the portal origin', async () => {
    const settings = await t.admin('PATCH', '/admin/tollgate/portal/settings', {
      enabled: true,
      apiReference: { url: `${referenceUrl}/openapi.json` },
    });
    expect(settings.body).toMatchObject({
      apiReference: { url: `${referenceUrl}/openapi.json`, fetchedAt: expect.any(String), fetchError: null },
      oidc: null,
    });
    const consumerId = (await t.admin('POST', '/admin/tollgate/consumers', { name: 'Globex' })).body
      .consumerId;
    const session = await t.admin('POST', '/admin/tollgate/portal/sessions', {
      consumerId,
      user: { id: 'u' },
    });
    links.push(session.body.url);
    expect(session.body.url).toMatch(new RegExp(`^${t.url}/admin/tollgate/portal/sign-in\\?code=`));
    const user = new PortalUser(t.url, '/admin');
    const signIn = await user.signIn(session.body.url);
    expect(signIn.headers.get('location')).toBe('/admin/tollgate/portal/');
    expect(user.setCookie).toContain('; Path=/admin/tollgate/portal;');
    // This Tollgate trusts no proxy: a client's own X-Forwarded-Proto makes nothing Secure.
    const spoofing = new PortalUser(t.url, '/admin');
    const again = await t.admin('POST', '/admin/tollgate/portal/sessions', { consumerId, user: { id: 'u' } });
    links.push(again.body.url);
    await spoofing.signIn(again.body.url, { 'x-forwarded-proto': 'https' });
    expect(spoofing.setCookie).toMatch(/; SameSite=Lax$/);
    expect((await user.call('GET', '/reference')).body).toEqual(DOCUMENT);
    expect((await user.call('POST', '/keys', { name: 'k' })).status).toBe(201);
    // Without the prefix, nothing of the portal answers.
    expect((await user.raw('GET', '/tollgate/portal/api/keys')).status).not.toBe(200);

    // The team's server goes away: the portal keeps the last good copy and the settings say why.
    await new Promise((resolve) => reference.close(resolve));
    const refetch = await t.admin('POST', '/admin/tollgate/portal/settings/api-reference/fetch');
    expect(refetch.body).toMatchObject({ fetchError: 'could not fetch the document' });
    expect((await user.call('GET', '/reference')).body).toEqual(DOCUMENT);
  });
});
