/**
 * Signing in to the portal in Chromium, through a real OpenID Provider (oidc-provider, tests/helpers/
 * openid-provider.ts) and by links: the portal's sign-in page offers the team's provider; the user
 * signs in on the provider's own pages and lands on their keys, as the consumer their claim names.
 * Every way a sign-in fails (no consumer matches the claim, the user cancels at the provider, the
 * provider's answer comes back without the sign-in started here, a link used twice or expired) gets the
 * portal's own page: the team's title, logo and accent colour, what happened and what to do, a way
 * back and the team's support link, under the portal's CSP, axe clean from 390 px up, and no session.
 */
import type { BrowserContext, Response } from 'playwright-core';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { startOpenIdProvider, type OpenIdProvider } from '../helpers/openid-provider.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import {
  consoleSuite,
  openTab,
  overflow,
  seriousAccessibilityViolations,
  type ConsoleSession,
} from './helpers/console-browser.js';
import { BRAND, PORTAL, guideScreenshot, signInLink } from './helpers/portal-browser.js';

/** The team's logo and support page live on its own https site, which the tests' browser answers. */
const LOGO_URL = 'https://acme.example/logo.svg';
const SUPPORT_URL = 'https://acme.example/support';
const LOGO =
  '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="32" height="32" fill="#0f766e"/></svg>';

let tollgate: Tollgate;
let provider: OpenIdProvider;
let consumerId = '';
/** Tollgate's clock: a sign-in link's ten minutes pass by moving it. */
const clock = new TestClock();

const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    provider = await startOpenIdProvider(`${tollgate.url}${PORTAL}/sign-in/oidc/callback`);
    const consumer = await tollgate.admin('POST', '/tollgate/consumers', {
      name: 'Acme',
      externalId: 'org-acme',
    });
    expect(consumer.status).toBe(201);
    consumerId = consumer.body.consumerId as string;
    const settings = await tollgate.admin('PATCH', `${PORTAL}/settings`, {
      enabled: true,
      ...BRAND,
      logoUrl: LOGO_URL,
      supportUrl: SUPPORT_URL,
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
  },
  120_000,
  clock.env,
);

afterAll(() => provider?.close());

async function serveLogo(context: BrowserContext): Promise<void> {
  await context.route(LOGO_URL, (route) => route.fulfill({ contentType: 'image/svg+xml', body: LOGO }));
}

/** A fresh tab on `url`, the team's logo reachable. */
const tabOn = (url: string) => openTab(suite.browser, tollgate, url, undefined, serveLogo);

/** An answer of the portal's sign-in paths, the last one the tab got. */
function lastSignInAnswer(session: ConsoleSession): Promise<Response> {
  return session.page.waitForResponse((r) => new URL(r.url()).pathname.startsWith(`${PORTAL}/sign-in`));
}

/** From the portal's sign-in page to the provider's login page. */
async function toProvider(session: ConsoleSession): Promise<void> {
  const { page } = session;
  await page.getByRole('heading', { level: 1, name: `Sign in to ${BRAND.title}` }).waitFor();
  await page.getByRole('link', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();
  await page.waitForURL((url) => url.origin === provider.issuer);
}

/** From the portal's sign-in page through the provider's login and consent pages, as `login`. */
async function signInWithProvider(login: string): Promise<{ session: ConsoleSession; status: number }> {
  const session = await tabOn(`${tollgate.url}${PORTAL}/`);
  const { page } = session;
  if (login === 'ann') {
    await page.getByRole('heading', { level: 1, name: `Sign in to ${BRAND.title}` }).waitFor();
    await page.setViewportSize({ width: 1280, height: 480 });
    await guideScreenshot(page, 'sign-in');
  }
  await toProvider(session);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any');
  const answered = lastSignInAnswer(session);
  await page.locator('button[type="submit"]').click();
  // The provider asks for consent once per client: its Continue button.
  await page.waitForURL((url) => url.origin !== provider.issuer || url.pathname.includes('/interaction/'));
  if (new URL(page.url()).origin === provider.issuer) await page.locator('button[type="submit"]').click();
  await page.waitForURL((url) => url.origin === tollgate.url);
  return { session, status: (await answered).status() };
}

/**
 * The page of a failed sign-in as the customer sees it: the team's brand, `heading` and what to do,
 * the way back and the support link; no script, nothing the CSP refused, axe clean and within the
 * viewport at 390 and 1280 px; no session.
 */
async function expectBrandedFailure(session: ConsoleSession, heading: string, todo: string): Promise<void> {
  const { page } = session;
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  expect(await page.title()).toBe(`${heading} · ${BRAND.title}`);
  expect(await page.getByRole('main').textContent()).toContain(todo);
  expect(await page.getByRole('banner').textContent()).toBe(BRAND.title);
  // The logo, loaded from the team's site as the CSP allows.
  await page.waitForFunction(() => document.querySelector<HTMLImageElement>('header img')?.complete);
  expect(
    await page
      .getByRole('banner')
      .locator('img')
      .evaluate((img: HTMLImageElement) => img.naturalWidth),
  ).toBe(32);
  expect(
    await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()),
  ).toBe(BRAND.accentColor);
  const back = page.getByRole('link', { name: 'Back to the sign-in page' });
  expect(await back.getAttribute('href')).toBe(`${PORTAL}/`);
  // The portal's button, in the team's colour.
  expect(await back.evaluate((a) => getComputedStyle(a).backgroundColor)).toBe('rgb(15, 118, 110)');
  expect(await page.getByRole('link', { name: 'Contact support' }).getAttribute('href')).toBe(SUPPORT_URL);
  expect(await page.evaluate(() => document.scripts.length)).toBe(0);
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    expect((await overflow(page)).past).toEqual([]);
  }
  expect(session.cspViolations).toEqual([]);
  expect((await session.context.cookies(tollgate.url)).map((c) => c.name)).not.toContain('tollgate_portal');
  expect((await session.context.request.get(`${tollgate.url}${PORTAL}/api/me`)).status()).toBe(401);
}

it('signs a user in through the provider onto their keys, as the consumer their claim names', async () => {
  const { session } = await signInWithProvider('ann');
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

it("a user whose claim matches no consumer gets the portal's page saying so, and no session", async () => {
  const { session, status } = await signInWithProvider('eve');
  try {
    expect(status).toBe(403);
    await expectBrandedFailure(session, 'No account matches', 'Ask the team that gave you access to add you');
  } finally {
    await session.context.close();
  }
});

it("a sign-in cancelled at the provider gets the portal's page, whose way back starts again", async () => {
  const session = await tabOn(`${tollgate.url}${PORTAL}/`);
  const { page } = session;
  try {
    await toProvider(session);
    const answered = lastSignInAnswer(session);
    await page.getByRole('link', { name: '[ Cancel ]' }).click();
    expect((await answered).status()).toBe(400);
    await expectBrandedFailure(session, 'Sign-in failed', 'Start again from the sign-in page');
    await page.getByRole('link', { name: 'Back to the sign-in page' }).click();
    await page.getByRole('heading', { level: 1, name: `Sign in to ${BRAND.title}` }).waitFor();
  } finally {
    await session.context.close();
  }
});

it("the provider's answer to a sign-in not started here gets the portal's page", async () => {
  const session = await tabOn(`${tollgate.url}${PORTAL}/sign-in/oidc/callback?code=forged&state=forged`);
  try {
    await expectBrandedFailure(session, 'Sign-in expired', 'Start again from the sign-in page');
  } finally {
    await session.context.close();
  }
});

it("a sign-in link used twice, or past its ten minutes, gets the portal's page and signs nobody in", async () => {
  const used = await signInLink(tollgate, consumerId);
  expect((await fetch(used, { redirect: 'manual' })).status).toBe(303);
  const session = await tabOn(`${tollgate.url}${PORTAL}/`);
  const { page } = session;
  try {
    await page.getByRole('heading', { level: 1, name: `Sign in to ${BRAND.title}` }).waitFor();
    expect((await page.goto(used))!.status()).toBe(400);
    // With a provider set, the page offers it as the other way in.
    await expectBrandedFailure(
      session,
      'This sign-in link does not work',
      'Ask the team that sent it for a new link, or sign in with your account.',
    );
    await guideScreenshot(page, 'sign-in-failed');

    const late = await signInLink(tollgate, consumerId);
    clock.advance(11 * MINUTE_MS);
    expect((await page.goto(late))!.status()).toBe(400);
    await expectBrandedFailure(
      session,
      'This sign-in link does not work',
      'a link works once, for 10 minutes',
    );
  } finally {
    await session.context.close();
  }
});
