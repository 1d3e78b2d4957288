/**
 * Every page of the developer portal in Chromium against a built Tollgate, on a phone (390 px), a
 * laptop (1280 px) and a wide screen (1920 px): signed in by a link, with keys of the consumer and real
 * traffic through them. Each page shows its content, reaches nowhere past the viewport, is clean for
 * axe-core (serious and critical findings) and meets no script error or CSP violation. The guide's
 * screenshots (docs/guides/portal.md, docs/images/portal-*.png) are taken here (the sign-in page's in
 * tests/browser/portal-oidc.test.ts, with its provider), so they show the pages as built.
 */
import type { Page } from 'playwright-core';
import { hit, sleep, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  consoleSuite,
  downloadedText,
  openTab,
  overflow,
  seriousAccessibilityViolations,
  unexpectedErrors,
  type ConsoleSession,
} from './helpers/console-browser.js';
import { BRAND, PORTAL, guideScreenshot, openPortalFor, signedInPortal } from './helpers/portal-browser.js';

const WIDTHS = [390, 1280, 1920] as const;

let tollgate: Tollgate;
let consumerId = '';
let keyId = '';
let secret = '';

const suite = consoleSuite(async (started) => {
  tollgate = started;
  consumerId = await openPortalFor(tollgate, 'Initech');
  for (const name of ['Mobile app', 'Weather widget', 'Nightly import']) {
    const key = await tollgate.admin('POST', '/consumer-api-key/create', { name, consumerId });
    expect(key.status).toBe(201);
    keyId ||= key.body.id;
    secret ||= key.body.secret;
    for (const path of ['/v1/forecast', '/v1/forecast', '/v1/status/500'])
      await hit(tollgate, key.body.secret, path);
  }
  await waitFor(
    async () => (await tollgate.admin('GET', `/tollgate/consumers/${consumerId}/usage`)).body,
    (usage) => usage.buckets.reduce((sum: number, b: { requests: number }) => sum + b.requests, 0) === 9,
    { timeoutMs: 10_000 },
  );
  await sleep(1_200);
});

/** Within the viewport at this width, and accessible as laid out there. */
async function expectUsable(session: ConsoleSession): Promise<void> {
  expect(await seriousAccessibilityViolations(session.page)).toEqual([]);
  const found = await overflow(session.page);
  expect(found.past).toEqual([]);
  expect(found.scrollWidth).toBeLessThanOrEqual(found.width);
}

/** The pages a signed-in customer visits: where, the heading that says it is there, what it shows. */
const PAGES: readonly { name: string; fragment: string; heading: string | RegExp; shows: string }[] = [
  { name: 'keys', fragment: '', heading: 'Your keys', shows: 'Weather widget' },
  { name: 'key', fragment: 'keys/{keyId}', heading: 'Mobile app', shows: 'Usage over time' },
  { name: 'usage', fragment: 'usage', heading: 'Usage', shows: 'Charged (requests)' },
  { name: 'plan', fragment: 'plan', heading: 'Plan and credits', shows: 'Plans you can switch to' },
  { name: 'failures', fragment: 'failures', heading: 'Failures', shows: 'backend' },
];

/** The guide's screenshots: each page at 1280 px, the keys page on a phone too (the whole page). */
async function screenshot(page: Page, name: string, width: number): Promise<void> {
  if (width === 1280) await guideScreenshot(page, name);
  else if (width === 390 && name === 'keys') await guideScreenshot(page, 'keys-phone', { fullPage: true });
}

describe.each(WIDTHS)('at %i px wide', (width) => {
  let session: ConsoleSession;
  beforeEach(async () => {
    session = await signedInPortal(suite.browser, tollgate, consumerId, width);
  });
  afterEach(async () => {
    expect(unexpectedErrors(session)).toEqual([]);
    await session.context.close();
  });

  it.each(PAGES)('shows the $name page, usable and axe clean', async ({ name, fragment, heading, shows }) => {
    const { page } = session;
    await page.goto(`${tollgate.url}${PORTAL}/#/${fragment.replace('{keyId}', keyId)}`);
    await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
    await page.getByText(shows).first().waitFor();
    // The title follows the heading within a render or two (a key's name arrives with its data).
    const title = `${typeof heading === 'string' ? heading : ''} · ${BRAND.title}`;
    await page.waitForFunction((expected) => document.title === expected, title);
    expect(await page.title()).toBe(title);
    await expectUsable(session);
    await screenshot(page, name, width);
  });

  it('shows the API reference rendered by swagger-ui, usable and axe clean', async () => {
    const { page } = session;
    await page.getByRole('link', { name: 'API reference' }).click();
    await page.getByRole('heading', { level: 1, name: 'API reference' }).waitFor();
    await page.getByText('The forecast for a city').waitFor();
    // "Try it" goes through the gateway: the document's server is this origin, its path kept.
    expect(await page.locator('.servers select, .servers').first().textContent()).toContain(
      `${tollgate.url}/v1`,
    );
    await expectUsable(session);
    await screenshot(page, 'reference', width);
  });
});

it('shows the sign-in page to a visitor without a session, with the team brand, at every width', async () => {
  const session = await openTab(suite.browser, tollgate, `${tollgate.url}${PORTAL}/`);
  try {
    for (const width of WIDTHS) {
      await session.page.setViewportSize({ width, height: 900 });
      await session.page.getByRole('heading', { level: 1, name: `Sign in to ${BRAND.title}` }).waitFor();
      await expectUsable(session);
    }
    expect(unexpectedErrors(session).filter((e) => !/status of 401/.test(e))).toEqual([]);
  } finally {
    await session.context.close();
  }
});

// Before the reference is tried: its answered request would add a tenth to the nine counted.
it("downloads the account's usage as the management API's CSV of the same range", async () => {
  const session = await signedInPortal(suite.browser, tollgate, consumerId);
  const { page } = session;
  try {
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByRole('list', { name: 'Series' }).getByRole('button', { name: 'Requests: 9' }).waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    const asked = new URL(session.requests.filter((u) => u.includes(`${PORTAL}/api/usage?`)).at(-1)!);
    const expected = await fetch(`${tollgate.url}/tollgate/consumers/${consumerId}/usage${asked.search}`, {
      headers: { authorization: `Bearer ${tollgate.rootToken}`, accept: 'text/csv' },
    });
    const file = await downloadedText(download);
    expect(file).toBe(await expected.text());
    expect(file.split('\r\n')[0]).toContain('latencyP99Ms');
    expect(download.suggestedFilename()).toMatch(/^usage-hour-\d{8}T\d{6}Z-\d{8}T\d{6}Z\.csv$/);
  } finally {
    await session.context.close();
  }
});

it('tries the API from the reference through the gateway: refused without a key, answered with the key pasted', async () => {
  const session = await signedInPortal(suite.browser, tollgate, consumerId);
  const { page } = session;
  try {
    await page.goto(`${tollgate.url}${PORTAL}/reference`);
    await page.getByRole('button', { name: /GET\s*\/forecast/ }).click();
    await page.getByRole('button', { name: 'Try it out' }).click();
    await page.getByPlaceholder('city').fill('Oslo');
    const status = page.locator('.live-responses-table tbody .response-col_status');
    await page.getByRole('button', { name: 'Execute' }).click();
    await status.getByText('401').waitFor();
    await page.getByLabel("Your key's secret").fill(secret);
    await page.getByRole('button', { name: 'Execute' }).click();
    await status.getByText('200').waitFor();
    // Opened, tried and answered, the reference is as accessible as it was closed.
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    // The key never left the page's memory.
    expect(
      await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }, location.href])),
    ).not.toContain(secret);
    expect(unexpectedErrors(session).filter((e) => !/status of 401/.test(e))).toEqual([]);
  } finally {
    await session.context.close();
  }
});
