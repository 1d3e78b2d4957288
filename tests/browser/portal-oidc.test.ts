/**
 * "Sign in with …" in Chromium, through a real OpenID Provider (oidc-provider, tests/helpers/
 * openid-provider.ts): the portal's sign-in page offers the team's provider; the user signs in on the
 * provider's own pages and lands on their keys, as the consumer their claim names; a user whose claim
 * matches no consumer gets the server's clear page and no session.
 */
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { startOpenIdProvider, type OpenIdProvider } from '../helpers/openid-provider.js';
import { consoleSuite, openTab, type ConsoleSession } from './helpers/console-browser.js';
import { BRAND, PORTAL, guideScreenshot } from './helpers/portal-browser.js';

let tollgate: Tollgate;
let provider: OpenIdProvider;

const suite = consoleSuite(async (started) => {
  tollgate = started;
  provider = await startOpenIdProvider(`${tollgate.url}${PORTAL}/sign-in/oidc/callback`);
  const consumer = await tollgate.admin('POST', '/tollgate/consumers', {
    name: 'Acme',
    externalId: 'org-acme',
  });
  expect(consumer.status).toBe(201);
  const settings = await tollgate.admin('PATCH', `${PORTAL}/settings`, {
    enabled: true,
    ...BRAND,
    oidc: {
      issuer: provider.issuer,
      clientId: provider.clientId,
      clientSecret: provider.clientSecret,
      claim: 'org_id',
      match: 'externalId',
    },
  });
  expect(settings.status).toBe(200);
  provider.accounts.set('ann', { email: 'ann@acme.example', name: 'Ann', org_id: 'org-acme' });
  provider.accounts.set('eve', { email: 'eve@evil.example', org_id: 'org-nobody' });
});

afterAll(() => provider?.close());

/** From the portal's sign-in page through the provider's login and consent pages, as `login`. */
async function signInWithProvider(login: string): Promise<ConsoleSession> {
  const session = await openTab(suite.browser, tollgate, `${tollgate.url}${PORTAL}/`);
  const { page } = session;
  await page.getByRole('heading', { level: 1, name: `Sign in to ${BRAND.title}` }).waitFor();
  if (login === 'ann') {
    await page.setViewportSize({ width: 1280, height: 480 });
    await guideScreenshot(page, 'sign-in');
  }
  await page.getByRole('link', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();
  await page.waitForURL((url) => url.origin === provider.issuer);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any');
  await page.locator('button[type="submit"]').click();
  // The provider asks for consent once per client: its Continue button.
  await page.waitForURL((url) => url.origin !== provider.issuer || url.pathname.includes('/interaction/'));
  if (new URL(page.url()).origin === provider.issuer) await page.locator('button[type="submit"]').click();
  await page.waitForURL((url) => url.origin === tollgate.url);
  return session;
}

it('signs a user in through the provider onto their keys, as the consumer their claim names', async () => {
  const session = await signInWithProvider('ann');
  try {
    await session.page.getByRole('heading', { level: 1, name: 'Your keys' }).waitFor();
    expect(session.page.url()).toBe(`${tollgate.url}${PORTAL}/`);
    expect(await session.page.getByRole('banner').textContent()).toContain('ann@acme.example');
    expect(await session.page.getByText('Acme:').textContent()).toContain('0 keys');
    expect(session.cspViolations).toEqual([]);
  } finally {
    await session.context.close();
  }
});

it('a user whose claim matches no consumer gets a clear page, and no session', async () => {
  const session = await signInWithProvider('eve');
  try {
    await session.page.getByRole('heading', { level: 1, name: /No account matches/ }).waitFor();
    // That page allows no script: the browser's own cookies are asked instead.
    expect((await session.context.cookies(tollgate.url)).map((c) => c.name)).not.toContain('tollgate_portal');
    expect((await session.context.request.get(`${tollgate.url}${PORTAL}/api/me`)).status()).toBe(401);
  } finally {
    await session.context.close();
  }
});
