/**
 * A customer's whole walk through the developer portal, in Chromium against a built Tollgate in both
 * modes (Postgres and Redis; embedded, nothing configured), as the guide tells it
 * (docs/guides/portal.md): signed in by a link the team's backend minted through the management API;
 * creates a key and sees its secret once (never in a URL or browser storage), which works at the
 * gateway; rolls it with an hour of grace (both secrets work); mints a token of it, shown once and
 * copied, which the backend answers through the gateway; tries the API from the reference with a token
 * the page mints (neither token in the browser's storage or address); restricts its origins (a request
 * from elsewhere is refused); reads its usage; switches plan (the management API sees it); signs out
 * (the session no longer answers, and the link cannot sign in again).
 */
import type { Page } from 'playwright-core';
import { hit, sleep, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  clipboardText,
  consoleSuite,
  openTab,
  seriousAccessibilityViolations,
  unexpectedErrors,
  type SuiteMode,
} from './helpers/console-browser.js';
import { BRAND, PLANS, PORTAL, openPortalFor, signInLink } from './helpers/portal-browser.js';

/** What the page could keep of a secret: both storages, the address, the history entry. */
async function browserKeeps(page: Page): Promise<string> {
  return page.evaluate(() =>
    JSON.stringify([{ ...localStorage }, { ...sessionStorage }, location.href, history.state]),
  );
}

/** What the page's own script gets calling the API through the gateway with `credential`. */
function callApiFrom(page: Page, credential: string): Promise<{ status: number; body: unknown }> {
  return page.evaluate(async (bearer) => {
    const answer = await fetch('/v1/forecast?city=Oslo', { headers: { authorization: `Bearer ${bearer}` } });
    return { status: answer.status, body: (await answer.json()) as unknown };
  }, credential);
}

const MODES: readonly SuiteMode[] = ['redis-postgres', 'embedded'];

describe.each(MODES)('%s', (mode) => {
  let tollgate: Tollgate;
  let consumerId = '';

  const suite = consoleSuite(
    async (started) => {
      tollgate = started;
      consumerId = await openPortalFor(tollgate, 'Globex Corporation');
    },
    120_000,
    {},
    mode,
  );

  it('signs in by link, creates, rolls, mints a token of and restricts a key, tries the API, reads usage, switches plan and signs out', async () => {
    const link = await signInLink(tollgate, consumerId);
    const session = await openTab(suite.browser, tollgate, link);
    const { page } = session;
    try {
      // The link signed in and left the address bar: the portal's own page, branded.
      await page.getByRole('heading', { level: 1, name: 'Your keys' }).waitFor();
      expect(page.url()).toBe(`${tollgate.url}${PORTAL}/`);
      // The tab's title follows the heading within a render (PageTitle sets it in an effect).
      const title = `Your keys · ${BRAND.title}`;
      await page.waitForFunction((expected) => document.title === expected, title);
      expect(await page.title()).toBe(title);
      expect(await page.getByRole('banner').textContent()).toContain(BRAND.title);
      expect(
        await page.evaluate(() =>
          getComputedStyle(document.documentElement).getPropertyValue('--accent').trim(),
        ),
      ).toBe(BRAND.accentColor);
      await page.getByText('You have no key yet').waitFor();

      // A new key: its secret shown once, and it works at the gateway.
      await page.getByLabel('Name', { exact: true }).fill('Weather widget');
      await page.getByRole('button', { name: 'Create key' }).click();
      const shown = page.getByLabel('Secret of the new key');
      await shown.waitFor();
      const secret = await shown.inputValue();
      expect(secret).toMatch(/^tg_/);
      expect(await browserKeeps(page)).not.toContain(secret);
      expect(await hit(tollgate, secret)).toBe(200);
      const row = page.getByRole('row').filter({ hasText: 'Weather widget' });
      expect(await row.textContent()).toContain(`tg_…${secret.slice(-4)}`);
      await page.getByRole('button', { name: 'I have copied it' }).click();
      await page.getByLabel('Secret of the new key').waitFor({ state: 'detached' });
      // Shown once: a reload shows the masked form only.
      await page.reload();
      await row.waitFor();
      expect(await page.content()).not.toContain(secret);

      // Its own page: roll with an hour of grace. Both secrets work until the grace ends.
      await row.getByRole('link', { name: 'Weather widget' }).click();
      await page.getByRole('heading', { level: 1, name: 'Weather widget' }).waitFor();
      await page.getByRole('button', { name: 'Roll secret…' }).click();
      const roll = page.getByRole('dialog', { name: 'Roll the secret' });
      // The portal allows a day of grace at most.
      await roll.getByRole('radio', { name: '24 hours' }).waitFor();
      expect(await roll.getByRole('radio').allInnerTexts()).toHaveLength(3);
      await roll.getByRole('radio', { name: '1 hour' }).check();
      await roll.getByRole('button', { name: 'Roll secret' }).click();
      const rolled = await roll.getByLabel('New secret (copy it now)').inputValue();
      expect(rolled).toMatch(/^tg_/);
      expect(rolled).not.toBe(secret);
      expect(await roll.textContent()).toContain('The previous secret keeps working until');
      expect(await browserKeeps(page)).not.toContain(rolled);
      await roll.getByRole('button', { name: 'Done' }).click();
      await page.getByRole('status').filter({ hasText: 'The secret was rolled.' }).waitFor();
      expect(await hit(tollgate, rolled)).toBe(200);
      expect(await hit(tollgate, secret)).toBe(200);

      // A token of the key, shown once in its dialog and copied: the page's script calls the API with it
      // through the gateway, and the backend answers.
      await page.getByRole('button', { name: 'Mint a token…' }).click();
      const mint = page.getByRole('dialog', { name: 'Mint a token' });
      expect(await mint.getByRole('radio', { name: '1 hour' }).isChecked()).toBe(true);
      await mint.getByRole('button', { name: 'Mint token' }).click();
      const token = await mint.getByLabel('Token (copy it now)').inputValue();
      expect(token).toMatch(/^tgt_/);
      await mint.getByRole('button', { name: 'Copy' }).click();
      await mint.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
      expect(await clipboardText(page)).toBe(token);
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      expect(await callApiFrom(page, token)).toEqual({
        status: 200,
        body: { method: 'GET', url: '/v1/forecast?city=Oslo' },
      });
      expect(await browserKeeps(page)).not.toContain(token);
      await mint.getByRole('button', { name: 'Done' }).click();
      await mint.waitFor({ state: 'detached' });
      expect(await page.content()).not.toContain(token);

      // The API reference's "try it" with a token the page mints for the key: through the gateway, the
      // backend's answer on the page, the token in the request only.
      await page.getByRole('link', { name: 'API reference' }).click();
      await page.getByRole('heading', { level: 1, name: 'API reference' }).waitFor();
      await page.getByLabel('Key to mint a token of').selectOption({ label: 'Weather widget' });
      const [minted] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/tokens')),
        page.getByRole('button', { name: 'Use a token for an hour' }).click(),
      ]);
      const tried = ((await minted.json()) as { token: string }).token;
      await page.getByRole('status').filter({ hasText: 'A token of Weather widget, until' }).waitFor();
      await page.getByRole('button', { name: /GET\s*\/forecast/ }).click();
      await page.getByRole('button', { name: 'Try it out' }).click();
      await page.getByPlaceholder('city').fill('Oslo');
      const [sent] = await Promise.all([
        page.waitForRequest((r) => r.url().includes('/v1/forecast')),
        page.getByRole('button', { name: 'Execute' }).click(),
      ]);
      expect(sent.headers()['x-api-key']).toBe(tried);
      const responses = page.locator('.live-responses-table');
      await responses.locator('.response-col_status').getByText('200').waitFor();
      // The backend's own answer, as swagger-ui shows its body.
      const body = await responses.locator('.response-col_description .microlight').first().textContent();
      expect(JSON.parse(body!)).toEqual({ method: 'GET', url: '/v1/forecast?city=Oslo' });
      expect(await browserKeeps(page)).not.toContain(tried);
      await page.getByRole('link', { name: 'Back to your keys' }).click();
      await row.getByRole('link', { name: 'Weather widget' }).click();
      await page.getByRole('heading', { level: 1, name: 'Weather widget' }).waitFor();

      // Origins: only the customer's own site may use the key from a browser.
      await page.getByRole('button', { name: 'Origins and addresses…' }).click();
      const restrict = page.getByRole('dialog', { name: 'Where the key may be used' });
      await restrict.getByLabel('Allowed origins').fill('https://widget.globex.example');
      await restrict.getByRole('button', { name: 'Save' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: 'Where the key may be used from is saved.' })
        .waitFor();
      // The details show it once the key is read again.
      await page.locator('dl.details').getByText('https://widget.globex.example').waitFor();
      expect(await hit(tollgate, rolled, '/v1/items', { origin: 'https://widget.globex.example' })).toBe(200);
      expect(await hit(tollgate, rolled, '/v1/items', { origin: 'https://evil.example' })).toBe(403);

      // Usage: the key's page counts what the gateway served: six 200s (two with tokens) and the 403, the
      // consumer's the same.
      const keyId = page.url().split('/').pop()!;
      await waitFor(
        async () => (await tollgate.admin('GET', `/consumer-api-key/${keyId}`)).body,
        (detail) => detail.usage.totalRequests === 7,
        { timeoutMs: 10_000 },
      );
      // The embedded store takes usage every 500 ms: once it has these, no write is in flight.
      await sleep(1_200);
      await page.getByRole('button', { name: 'Refresh' }).click();
      const legend = page.getByRole('list', { name: 'Series' });
      await legend.getByRole('button', { name: 'Requests: 7' }).waitFor();
      expect(await legend.getByRole('button').allInnerTexts()).toEqual([
        'Requests: 7',
        '429s: 0',
        'Errors: 1',
      ]);
      await page.getByRole('link', { name: 'Usage', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Usage' }).waitFor();
      await page.getByRole('list', { name: 'Series' }).getByRole('button', { name: 'Requests: 7' }).waitFor();

      // Plan: from Basic to Pro, seen by the management API at once.
      await page.getByRole('link', { name: 'Plan and credits' }).click();
      await page.getByRole('heading', { level: 2, name: 'Your plan: Basic' }).waitFor();
      // 5,000 credits, one spent by each of the six requests forwarded; the refused one cost nothing.
      expect(await page.getByRole('region', { name: 'Credits' }).textContent()).toContain(
        '4,994 credits left',
      );
      await page.getByRole('button', { name: 'Switch to Pro' }).click();
      await page.getByRole('status').filter({ hasText: 'You are on the Pro plan now.' }).waitFor();
      await page.getByRole('heading', { level: 2, name: 'Your plan: Pro' }).waitFor();
      expect((await tollgate.admin('GET', `/tollgate/consumers/${consumerId}`)).body.rateLimitId).toBe(
        PLANS.pro,
      );

      // Signing out ends the session: the page shows so, the cookie no longer answers.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { level: 1, name: 'You signed out' }).waitFor();
      const me = await page.evaluate(async (path) => (await fetch(path)).status, `${PORTAL}/api/me`);
      expect(me).toBe(401);
      // The link was single-use: it does not sign in again.
      await page.goto(link);
      await page.getByRole('heading', { level: 1 }).waitFor();
      expect(await page.getByRole('heading', { level: 1, name: 'Your keys' }).count()).toBe(0);
      expect(unexpectedErrors(session).filter((e) => !/status of (400|401)/.test(e))).toEqual([]);
    } finally {
      await session.context.close();
    }
  }, 120_000);
});
