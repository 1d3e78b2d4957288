/**
 * Contract section 32 through the built server, in both modes: a key moved to another consumer shows
 * that consumer's portal user only what it did while it was theirs ("A key's past stays with the
 * consumer it belonged to"), and a portal user neither changes a key's expiry nor enables a key an
 * administrator disabled ("Administrators decide").
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startBackend, type Backend } from '../e2e/helpers/backend.js';
import { MODES, type Deployment } from '../e2e/helpers/modes.js';
import { startTollgate, type Tollgate } from '../e2e/helpers/tollgate.js';
import { waitFor } from '../helpers/poll.js';
import { PortalUser } from '../helpers/portal-user.js';

let backend: Backend;

beforeAll(async () => {
  backend = await startBackend();
}, 30_000);

afterAll(async () => {
  await backend?.close();
});

const requestsIn = (body: { buckets: { requests: number }[] }) =>
  body.buckets.reduce((n, bucket) => n + bucket.requests, 0);

describe.each(MODES)('$name', (mode) => {
  let deployment: Deployment;
  let t: Tollgate;
  let consumerA: string;
  let consumerB: string;
  let bob: PortalUser;

  const createKey = async (consumerId: string) =>
    (await t.admin('POST', '/consumer-api-key/create', { name: 'k', consumerId })).body as {
      id: string;
      secret: string;
    };
  const proxied = async (secret: string, path: string) =>
    (await fetch(`${t.url}${path}`, { headers: { 'x-api-key': secret } })).status;

  beforeAll(async () => {
    deployment = await mode.deploy();
    t = await startTollgate({ ...deployment.env, UPSTREAM_URL: backend.url, TRUST_PROXY: '127.0.0.1' });
    consumerA = (await t.admin('POST', '/tollgate/consumers', { name: 'Acme' })).body.consumerId;
    consumerB = (await t.admin('POST', '/tollgate/consumers', { name: 'Bravo' })).body.consumerId;
    expect((await t.admin('PATCH', '/tollgate/portal/settings', { enabled: true })).status).toBe(200);
    const link = await t.admin('POST', '/tollgate/portal/sessions', {
      consumerId: consumerB,
      user: { id: 'bob' },
    });
    bob = new PortalUser(t.url);
    expect((await bob.signIn(link.body.url as string)).status).toBe(303);
  }, 120_000);

  afterAll(async () => {
    await t?.stop();
    await deployment?.dispose();
  }, 60_000);

  it("a key moved to the user's consumer shows only the usage and failures from while it was theirs", async () => {
    const key = await createKey(consumerA);
    expect(await proxied(key.secret, '/v1/items')).toBe(200);
    expect(await proxied(key.secret, '/v1/status/500')).toBe(500);
    // Stored under Acme before the move: the key's own log holds the failure.
    await waitFor(
      () => t.admin('GET', `/consumer-api-key/${key.id}/failures`),
      (res) => res.body.failures?.length === 1,
      { timeoutMs: 15_000, everyMs: 200 },
    );
    expect((await t.admin('PATCH', `/consumer-api-key/${key.id}`, { consumerId: consumerB })).status).toBe(
      200,
    );

    const usage = await bob.call('GET', `/keys/${key.id}/usage?granularity=day`);
    expect({ status: usage.status, requests: requestsIn(usage.body) }).toEqual({ status: 200, requests: 0 });
    const failures = await bob.call('GET', `/keys/${key.id}/failures`);
    expect({ status: failures.status, failures: failures.body.failures }).toEqual({
      status: 200,
      failures: [],
    });
    // Asking for Acme's part by the query changes nothing: the session decides.
    const asked = await bob.call('GET', `/keys/${key.id}/failures?consumerId=${consumerA}`);
    expect(asked.body.failures).toEqual([]);

    // What it does as Bravo's shows: pending at first, then stored.
    expect(await proxied(key.secret, '/v1/status/503')).toBe(503);
    const own = await waitFor(
      () => bob.call('GET', `/keys/${key.id}/failures`),
      (res) => res.body.failures?.length >= 1,
      { timeoutMs: 15_000, everyMs: 200 },
    );
    expect(own.value.body.failures.map((f: { status: number }) => f.status)).toEqual([503]);
    expect(requestsIn((await bob.call('GET', `/keys/${key.id}/usage?granularity=day`)).body)).toBe(1);
    expect(requestsIn((await bob.call('GET', `/keys/${key.id}/usage?granularity=minute`)).body)).toBe(1);
    // An administrator still sees the key's whole past.
    expect(requestsIn((await t.admin('GET', `/consumer-api-key/${key.id}/usage?granularity=day`)).body)).toBe(
      3,
    );
  });

  it("a portal user cannot change a key's expiry, set by anyone", async () => {
    const key = await createKey(consumerB);
    const set = await bob.call('PATCH', `/keys/${key.id}`, { expiresAt: '2999-01-01T00:00:00Z' });
    expect({ status: set.status, code: set.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    const expiry = '2030-01-01T00:00:00Z';
    expect((await t.admin('PATCH', `/consumer-api-key/${key.id}`, { expiresAt: expiry })).status).toBe(200);
    const lifted = await bob.call('PATCH', `/keys/${key.id}`, { expiresAt: null });
    expect({ status: lifted.status, code: lifted.body.code }).toEqual({
      status: 400,
      code: 'validation_failed',
    });
    expect((await bob.call('GET', `/keys/${key.id}`)).body.expiresAt).toBe(expiry);
  });

  it('a portal user enables only a key they disabled themselves', async () => {
    const key = await createKey(consumerB);
    const enable = () => bob.call('PATCH', `/keys/${key.id}`, { enabled: true });
    const enabled = async () => (await bob.call('GET', `/keys/${key.id}`)).body.enabled as boolean;

    // Theirs to disable and enable again.
    const disabled = await bob.call('PATCH', `/keys/${key.id}`, { enabled: false });
    expect(disabled.body).toMatchObject({ enabled: false, disabledByAdministrator: false });
    expect((await enable()).status).toBe(200);
    expect(await enabled()).toBe(true);

    // An administrator's disabling stands, even after the user disables it in turn.
    expect((await t.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: false })).status).toBe(200);
    expect((await enable()).status).toBe(403);
    expect((await bob.call('PATCH', `/keys/${key.id}`, { enabled: false })).status).toBe(200);
    const refused = await enable();
    expect({ status: refused.status, code: refused.body.code }).toEqual({
      status: 403,
      code: 'disabled_by_administrator',
    });
    expect((await bob.call('GET', `/keys/${key.id}`)).body).toMatchObject({
      enabled: false,
      disabledByAdministrator: true,
    });
    expect(await proxied(key.secret, '/v1/items')).toBe(403);

    // Disabled by the user, then again by an administrator: the administrator's now.
    expect((await t.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: true })).status).toBe(200);
    expect((await bob.call('PATCH', `/keys/${key.id}`, { enabled: false })).status).toBe(200);
    expect((await t.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: false })).status).toBe(200);
    expect((await enable()).status).toBe(403);

    // Enabled by an administrator, it is the user's to disable and enable again.
    expect((await t.admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: true })).status).toBe(200);
    expect((await bob.call('PATCH', `/keys/${key.id}`, { enabled: false })).status).toBe(200);
    expect((await enable()).status).toBe(200);
    expect(await enabled()).toBe(true);
  });
});
