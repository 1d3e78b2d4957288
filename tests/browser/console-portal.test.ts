/**
 * The console's Portal page in Chromium against a built Tollgate: the settings set through the page
 * (checked through the management API), the brand's preview following the fields, "Fetch now" saying
 * what the fetch brought, a sign-in link minted and opened in a second browser (signed in on the
 * portal), that session ended from the console (the portal's next call answers 401), and a token of
 * portal:read only, which reads everything and can change nothing. Axe clean at 1280 px, nothing past
 * the edge at 390 px.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { waitFor } from '../helpers/poll.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  clipboardText,
  consoleSuite,
  openConsole,
  openTab,
  overflow,
  rowWith,
  seriousAccessibilityViolations,
  signIn,
  signedInTab,
  unexpectedErrors,
  visit,
} from './helpers/console-browser.js';
import { PLANS, PORTAL, REFERENCE_DOCUMENT } from './helpers/portal-browser.js';

let tollgate: Tollgate;
let consumerId = '';
/** The team's site, serving its OpenAPI document (any other path: 404). */
let site: Server;
let siteUrl = '';

// The team's site is this test's server, on loopback over http: both allowed by name.
const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    site = createServer((req, res) => {
      if (req.url !== '/openapi.json') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(REFERENCE_DOCUMENT));
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    for (const [rateLimitId, description] of [
      [PLANS.basic, 'Basic'],
      [PLANS.pro, 'Pro'],
    ] as const) {
      const plan = await tollgate.admin('POST', '/rate-limit/create', {
        rateLimitId,
        description,
        limit: 1000,
        period: 'day',
      });
      expect(plan.status).toBe(201);
    }
    const consumer = await tollgate.admin('POST', '/tollgate/consumers', {
      name: 'Initech',
      rateLimitId: PLANS.basic,
    });
    expect(consumer.status).toBe(201);
    consumerId = consumer.body.consumerId as string;
  },
  undefined,
  { PORTAL_REFERENCE_ALLOW_HTTP: 'true', PORTAL_REFERENCE_ALLOW_PRIVATE: 'true' },
);

afterAll(() => new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined))));

const settings = async () => (await tollgate.admin('GET', `${PORTAL}/settings`)).body;

/** The preview's accent colour as drawn: its sample button's background. */
const previewAccent = (page: Page) =>
  page
    .getByTestId('portal-preview')
    .locator('.portal-preview-button')
    .evaluate((el) => getComputedStyle(el).backgroundColor);

/**
 * The preview's accent once it is `rgb`, or what it still is after 5 s: the preview sets the colour in
 * an effect, which runs after the page's next frame, not within the keystroke that changed the field.
 */
const previewAccentOnce = async (page: Page, rgb: string) =>
  (
    await waitFor(
      () => previewAccent(page),
      (drawn) => drawn === rgb,
      { timeoutMs: 5_000 },
    )
  ).value;

describe('with the root token', () => {
  const tab = signedInTab(suite, () => tollgate.rootToken);

  it('sets the settings through the page, the preview following the fields', async () => {
    const { page } = tab.session;
    // A logo the console's CSP lets it load (its own origin): the console's icon.
    const logo = new URL(
      (await page.locator('link[rel="icon"]').getAttribute('href'))!,
      tab.session.consoleUrl,
    ).href;
    await page.getByRole('link', { name: 'Portal' }).click();
    await page.getByRole('heading', { level: 1, name: 'Portal' }).waitFor();
    const preview = page.getByTestId('portal-preview');

    await page.getByLabel('The portal is open').check();
    await page.getByLabel('Title', { exact: true }).fill('Acme Weather API');
    expect(await preview.innerText()).toContain('Acme Weather API');
    // A logo on another site is named, not loaded: the console's CSP loads images from its own origin.
    await page.getByLabel('Logo URL').fill('https://cdn.acme.example/logo.svg');
    await preview.getByText('Logo from cdn.acme.example').waitFor();
    expect(await preview.locator('img').count()).toBe(0);
    await page.getByLabel('Logo URL').fill(logo);
    await preview.locator('img.logo').waitFor();
    expect(await preview.locator('img.logo').getAttribute('src')).toBe(logo);
    // Loaded, not refused (a CSP refusal would also fail the test's error check).
    await page.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>('[data-testid="portal-preview"] img.logo');
      return img !== null && img.complete && img.naturalWidth > 0;
    });
    const defaultAccent = await previewAccent(page);
    await page.getByLabel('Accent colour').fill('#0f766e');
    expect(await previewAccentOnce(page, 'rgb(15, 118, 110)')).toBe('rgb(15, 118, 110)');
    // A colour too light for white text: the preview shows it, and says so.
    await page.getByLabel('Accent colour').fill('#fde047');
    await page.getByText(/White text on #fde047 has a contrast of 1\.\d:1/).waitFor();
    // Not a colour: the preview keeps the default, and saving says what is wrong.
    await page.getByLabel('Accent colour').fill('teal');
    expect(await previewAccentOnce(page, defaultAccent)).toBe(defaultAccent);
    await page.getByLabel('Support URL').fill('acme.example/help');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Write the colour as # and six hex digits, e.g. #0f766e.').waitFor();
    await page.getByText('The support address must be a web address starting with https://').waitFor();
    expect((await settings()).title).not.toBe('Acme Weather API');

    await page.getByLabel('Accent colour').fill('#0f766e');
    await page.getByLabel('Support URL').fill('https://acme.example/help');
    await page.getByLabel('Keys per consumer, at most').fill('7');
    for (const plan of [PLANS.basic, PLANS.pro]) {
      await page.getByRole('group', { name: 'Public plans' }).getByLabel('Plan id').fill(plan);
      await page.getByRole('button', { name: 'Add plan' }).click();
    }
    await page.getByLabel('An address Tollgate fetches').check();
    await page.getByLabel('OpenAPI document URL').fill(`${siteUrl}/openapi.json`);
    await page.getByLabel('Offer “Sign in with …”').check();
    await page.getByLabel('Issuer').fill('https://id.acme.example');
    await page.getByLabel('Client id').fill('tollgate-portal');
    await page.getByLabel('Client secret').fill('oidc-secret-never-shown');
    await page.getByLabel('Claim').fill('org_id');
    await page.getByLabel('Compared with').fill('externalId');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'The portal’s settings are saved.' }).waitFor();

    const saved = await settings();
    expect(saved).toMatchObject({
      enabled: true,
      title: 'Acme Weather API',
      logoUrl: logo,
      accentColor: '#0f766e',
      supportUrl: 'https://acme.example/help',
      maxKeysPerConsumer: 7,
      publicPlans: [PLANS.basic, PLANS.pro],
      apiReference: { url: `${siteUrl}/openapi.json`, fetchError: null },
      oidc: {
        issuer: 'https://id.acme.example',
        clientId: 'tollgate-portal',
        claim: 'org_id',
        match: 'externalId',
        clientSecretSet: true,
      },
    });
    expect(saved.apiReference.fetchedAt).not.toBeNull();
    // The secret is write-only: said to be set, never read back into the page.
    expect(await page.getByLabel('Client secret').inputValue()).toBe('');
    await page.getByText('Set (never shown).').waitFor();
    expect(await page.content()).not.toContain('oidc-secret-never-shown');

    // "Fetch now" says what came of it: a good fetch, then a failed one.
    await page.getByRole('button', { name: 'Fetch now' }).click();
    await page.getByText(`from ${siteUrl}/openapi.json.`).waitFor();
    await page.getByLabel('OpenAPI document URL').fill(`${siteUrl}/no-such-document.json`);
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page
      .getByText(`The last fetch of ${siteUrl}/no-such-document.json failed: the server answered 404`)
      .waitFor();
    expect((await settings()).apiReference.fetchError).toBe('the server answered 404');

    // A plan removed from the public ones, and the document pasted instead.
    await page.getByRole('button', { name: `Remove ${PLANS.basic}` }).click();
    await page.getByLabel('A pasted document').check();
    await page.getByLabel('OpenAPI document (JSON)').fill('{"openapi": "3.1.0", "info": {"title": "Acme"');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Paste the OpenAPI document as a JSON object').waitFor();
    await page
      .getByLabel('OpenAPI document (JSON)')
      .fill('{"openapi": "3.1.0", "info": {"title": "Acme", "version": "1"}, "paths": {}}');
    await page.getByRole('button', { name: 'Save settings' }).click();
    // The page said "saved" before, so the API says when this save is done.
    const { value: pasted } = await waitFor(settings, (now) => 'document' in (now.apiReference ?? {}), {
      timeoutMs: 10_000,
    });
    expect(pasted).toMatchObject({
      publicPlans: [PLANS.pro],
      apiReference: { document: { openapi: '3.1.0', info: { title: 'Acme', version: '1' }, paths: {} } },
      oidc: { clientSecretSet: true },
    });
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it('mints a sign-in link shown once, and ends the session it opened', async () => {
    const { page } = tab.session;
    await visit(tab.session, 'portal', 'Portal');
    await page.getByLabel('Consumer', { exact: true }).fill(consumerId);
    await page.getByLabel('User id').fill('user-42');
    await page.getByLabel('Email (optional)').fill('ada@customer.example');
    await page.getByLabel('Name (optional)').fill('Ada');
    await page.getByLabel('Session lasts (hours)').fill('2');
    await page.getByRole('button', { name: 'Create sign-in link' }).click();
    const linkField = page.getByLabel('Sign-in link for ada@customer.example');
    const link = await linkField.inputValue();
    expect(link).toMatch(new RegExp(`^${tollgate.url}${PORTAL}/sign-in\\?code=`));
    await page.getByRole('button', { name: 'Copy' }).click();
    expect(await clipboardText(page)).toBe(link);
    // Never in the address or the browser's storage.
    expect(page.url()).not.toContain('code=');
    const stored = await page.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }));
    expect(stored).not.toContain(link.split('code=')[1]);
    // The new link is listed, not used yet.
    await rowWith(page, 'ada@customer.example').getByText('link not used yet').waitFor();

    const portal = await openTab(suite.browser, tollgate, link);
    try {
      await portal.page.getByRole('heading', { level: 1, name: 'Your keys' }).waitFor();
      const answers = () => portal.page.evaluate(async () => (await fetch('/tollgate/portal/api/me')).status);
      expect(await answers()).toBe(200);

      // Filtered by the consumer, the session shows as signed in.
      await page.getByLabel('Filter by consumer').fill(consumerId);
      await page.getByRole('button', { name: 'Filter' }).click();
      const row = rowWith(page, 'ada@customer.example');
      await row.getByText('link not used yet').waitFor({ state: 'detached' });
      await row.getByText('user-42').waitFor();
      const sessions = (await tollgate.admin('GET', `${PORTAL}/sessions?consumerId=${consumerId}`)).body
        .sessions;
      expect(sessions).toMatchObject([{ user: { id: 'user-42' }, signedIn: true }]);

      await row.getByRole('button', { name: 'End the session of ada@customer.example' }).click();
      const dialog = page.getByRole('dialog', { name: 'End this session?' });
      // Cancel first: nothing ends.
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect(await answers()).toBe(200);
      await row.getByRole('button', { name: 'End the session of ada@customer.example' }).click();
      await dialog.getByRole('button', { name: 'End session' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: 'The session of ada@customer.example is ended.' })
        .waitFor();
      await page.getByText(`No active session of ${consumerId}.`).waitFor();
      expect(await answers()).toBe(401);
      expect(unexpectedErrors(portal)).toEqual([]);
    } finally {
      await portal.context.close();
    }

    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await page.setViewportSize({ width: 390, height: 900 });
    const found = await overflow(page);
    expect(found.past).toEqual([]);
    expect(found.scrollWidth).toBeLessThanOrEqual(found.width);
  });
});

it('shows a token of portal:read only everything, every control disabled', async () => {
  const made = await tollgate.admin('POST', '/tollgate/admin-tokens', {
    name: 'portal reader',
    scopes: ['portal:read'],
  });
  expect(made.status).toBe(201);
  const before = await settings();
  const session = await openConsole(suite.browser, tollgate);
  try {
    const { page } = session;
    await signIn(session, made.body.secret);
    await page.getByRole('link', { name: 'Portal' }).click();
    await page.getByRole('heading', { level: 1, name: 'Portal' }).waitFor();
    expect(await page.getByLabel('Title', { exact: true }).inputValue()).toBe(before.title);
    for (const label of ['Title', 'Accent colour', 'Keys per consumer, at most', 'User id'])
      expect(await page.getByLabel(label, { exact: true }).isDisabled()).toBe(true);
    for (const name of [
      'Save settings (needs portal:write)',
      'Create sign-in link (needs portal:sessions)',
    ]) {
      const button = page.getByRole('button', { name, exact: true });
      expect(await button.isDisabled()).toBe(true);
    }
    await page.getByText('Listing the portal’s sessions needs the scope portal:sessions').waitFor();
    // The API refuses the same token too: nothing changed.
    const refused = await page.evaluate(async (token) => {
      const res = await fetch('/tollgate/portal/settings', {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Hijacked' }),
      });
      return res.status;
    }, made.body.secret as string);
    expect(refused).toBe(403);
    expect(await settings()).toEqual(before);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    expect(unexpectedErrors(session)).toEqual([]);
  } finally {
    await session.context.close();
  }
});
