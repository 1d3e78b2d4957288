/**
 * "Sign in with …" through a real OpenID Provider (oidc-provider on a free port), at the HTTP level
 * (the portal's pages drive it in Chromium in tests/browser): the authorization code flow with PKCE,
 * state and nonce; the ID token's claim picks the consumer by its externalId or a metadata field;
 * no match answers a clear page and opens no session; the sign-in is audited as the portal user.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MODES, type Deployment } from './helpers/modes.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';
import { signInThrough, startOpenIdProvider, type OpenIdProvider } from '../helpers/openid-provider.js';
import { PortalUser } from '../helpers/portal-user.js';

afterAll(() => expectNoSecretsLogged());

describe.each(MODES)('$name', (mode) => {
  let deployment: Deployment;
  let t: Tollgate;
  let provider: OpenIdProvider;
  let acme: string;
  let bravo: string;

  beforeAll(async () => {
    deployment = await mode.deploy();
    t = await startTollgate(deployment.env);
    provider = await startOpenIdProvider(`${t.url}/tollgate/portal/sign-in/oidc/callback`);
    acme = (await t.admin('POST', '/tollgate/consumers', { name: 'Acme', externalId: 'org-acme' })).body
      .consumerId;
    bravo = (
      await t.admin('POST', '/tollgate/consumers', { name: 'Bravo', metadata: { tenant: 'bravo-tenant' } })
    ).body.consumerId;
    const settings = await t.admin('PATCH', '/tollgate/portal/settings', {
      enabled: true,
      oidc: {
        issuer: provider.issuer,
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        claim: 'org_id',
        match: 'externalId',
      },
    });
    expect(settings.body.oidc).toMatchObject({
      clientSecretSet: true,
      redirectUri: `${t.url}/tollgate/portal/sign-in/oidc/callback`,
    });
    expect(JSON.stringify(settings.body)).not.toContain(provider.clientSecret);
    provider.accounts.set('ann', { email: 'ann@acme.example', name: 'Ann', org_id: 'org-acme' });
    provider.accounts.set('bo', { email: 'bo@bravo.example', org_id: 'bravo-tenant' });
    provider.accounts.set('eve', { email: 'eve@evil.example', org_id: 'org-nobody' });
  }, 120_000);

  afterAll(async () => {
    await t?.stop();
    await provider?.close();
    await deployment?.dispose();
    expect(t.output.filter((line) => line.includes(provider.clientSecret))).toEqual([]);
  }, 60_000);

  it('signs a user in through the provider, with PKCE, state and nonce, into the consumer their claim names', async () => {
    const branding = (await fetch(`${t.url}/tollgate/portal/api/branding`).then((r) => r.json())) as {
      oidc: { issuer: string; signInPath: string };
    };
    expect(branding.oidc).toEqual({ issuer: provider.issuer, signInPath: '/tollgate/portal/sign-in/oidc' });

    const visit = await signInThrough(`${t.url}${branding.oidc.signInPath}`, 'ann');
    const authorize = new URL(visit.visited.find((u) => u.startsWith(`${provider.issuer}/auth?`))!);
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      client_id: provider.clientId,
      response_type: 'code',
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      state: expect.stringMatching(/.{20,}/),
      nonce: expect.stringMatching(/.{20,}/),
      redirect_uri: `${t.url}/tollgate/portal/sign-in/oidc/callback`,
    });
    // Back at the portal's first page, signed in, the code gone from the address.
    expect(visit.visited.at(-1)).toBe(`${t.url}/tollgate/portal/`);
    const user = new PortalUser(t.url);
    user.cookie = `tollgate_portal=${visit.jar.get(new URL(t.url), 'tollgate_portal')}`;
    const me = await user.call('GET', '/me');
    expect(me.body).toMatchObject({
      user: { id: 'ann', email: 'ann@acme.example', name: 'Ann' },
      consumer: { id: acme, name: 'Acme' },
    });
    const [entry] = (await t.admin('GET', '/tollgate/audit-log?action=portal.session_create')).body.auditLog;
    expect(entry.actor).toEqual({ type: 'portal', id: 'ann', name: 'ann@acme.example', consumerId: acme });
  });

  it('matches a metadata field when told to', async () => {
    await t.admin('PATCH', '/tollgate/portal/settings', {
      oidc: {
        issuer: provider.issuer,
        clientId: provider.clientId,
        claim: 'org_id',
        match: 'metadata.tenant',
      },
    });
    const visit = await signInThrough(`${t.url}/tollgate/portal/sign-in/oidc`, 'bo');
    const user = new PortalUser(t.url);
    user.cookie = `tollgate_portal=${visit.jar.get(new URL(t.url), 'tollgate_portal')}`;
    expect((await user.call('GET', '/me')).body.consumer).toEqual({ id: bravo, name: 'Bravo' });
  });

  it('no consumer matches: a clear page, and no session', async () => {
    const before = (await t.admin('GET', '/tollgate/portal/sessions')).body.sessions.length;
    const visit = await signInThrough(`${t.url}/tollgate/portal/sign-in/oidc`, 'eve');
    expect(visit.last.status).toBe(403);
    expect(visit.last.text).toContain('No account matches');
    expect(visit.jar.get(new URL(t.url), 'tollgate_portal')).toBeUndefined();
    expect((await t.admin('GET', '/tollgate/portal/sessions')).body.sessions).toHaveLength(before);
  });

  it('a callback not started here (no flow cookie, or a forged state) opens no session', async () => {
    const forged = await fetch(`${t.url}/tollgate/portal/sign-in/oidc/callback?code=abc&state=xyz`, {
      redirect: 'manual',
    });
    expect(forged.status).toBe(400);
    expect(forged.headers.getSetCookie().some((c) => c.startsWith('tollgate_portal='))).toBe(false);
  });

  it('a provider that does not answer: a clear page, and no session', async () => {
    await provider.close();
    const res = await fetch(`${t.url}/tollgate/portal/sign-in/oidc`, { redirect: 'manual' });
    expect(res.status).toBe(502);
    expect(await res.text()).toContain('Your identity provider did not answer');
    expect(res.headers.getSetCookie()).toEqual([]);
  });
});
