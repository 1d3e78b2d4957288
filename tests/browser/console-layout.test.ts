/**
 * The console's layouts with real data, in Chromium against a built Tollgate: 200-character key names,
 * external ids, customer ids and paths (the most the API takes or records in full) and a 128-character
 * plan id, on a phone (390 px), a laptop (1280 and 1440 px) and a wide screen (1920 px). On every page
 * nothing reaches past the viewport (no sideways scrolling), every table column stays on screen, the
 * full texts stay in the page (a balance of 2^53−1 credits too), the key's Endpoints and Customers
 * tables keep to their own columns, the credits dialogs show entirely, and axe-core finds the page as
 * accessible laid out at that width as at any other.
 */
import type { Locator } from 'playwright-core';
import { hit, sleep, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  consoleSuite,
  overflow,
  seriousAccessibilityViolations,
  signedInTab,
  visit,
  type ConsoleSession,
} from './helpers/console-browser.js';

let tollgate: Tollgate;
const LONG_NAME = 'checkout-service-' + 'x'.repeat(183);
const WORDY_NAME = Array.from({ length: 20 }, (_, i) => `word${String(i).padStart(4, '0')}`)
  .join(' ')
  .padEnd(200, 'y');
const LONG_EXTERNAL_ID = 'cus_' + '7'.repeat(196);
const LONG_CUSTOMER = 'customer-' + 'c'.repeat(191);
const LONG_PATH = '/v1/' + 'orders/'.repeat(28);
const PLAN_ID = 'enterprise-' + 'p'.repeat(117);
let keyId = '';
let consumerId = '';
const LONG_URL = 'http://127.0.0.1:9/' + 'hooks/'.repeat(30);

const suite = consoleSuite(async (started) => {
  tollgate = started;
  expect([LONG_NAME, WORDY_NAME, LONG_EXTERNAL_ID, LONG_CUSTOMER, LONG_PATH].map((t) => t.length)).toEqual([
    200, 200, 200, 200, 200,
  ]);
  expect(
    (
      await tollgate.admin('POST', '/rate-limit/create', {
        rateLimitId: PLAN_ID,
        description: 'A plan with a long description. '.repeat(6),
        limit: 1000,
        period: 'day',
      })
    ).status,
  ).toBe(201);
  const created = await tollgate.admin('POST', '/consumer-api-key/create', {
    name: LONG_NAME,
    externalId: LONG_EXTERNAL_ID,
    rateLimitId: PLAN_ID,
    metadata: { note: 'z'.repeat(300) },
  });
  expect(created.status).toBe(201);
  keyId = created.body.id;
  const consumer = await tollgate.admin('POST', '/tollgate/consumers', {
    name: WORDY_NAME,
    externalId: LONG_EXTERNAL_ID,
    rateLimitId: PLAN_ID,
    credits: { remaining: 1000, refill: { amount: 1000, interval: 'month', dayOfMonth: 31 } },
  });
  expect(consumer.status).toBe(201);
  consumerId = consumer.body.consumerId;
  const wordy = await tollgate.admin('POST', '/consumer-api-key/create', { name: WORDY_NAME });
  expect(wordy.status).toBe(201);
  for (const [path, customer] of [
    [LONG_PATH, LONG_CUSTOMER],
    [LONG_PATH, 'acme'],
    ['/v1/short', LONG_CUSTOMER],
  ] as const) {
    expect(await hit(tollgate, created.body.secret, path, { 'x-customer-id': customer })).toBe(200);
  }
  expect(await hit(tollgate, wordy.body.secret)).toBe(200);
  // Disabled by the root token: the audit log names the key in its entry.
  expect(
    (await tollgate.admin('PATCH', `/consumer-api-key/${wordy.body.id}`, { enabled: false })).status,
  ).toBe(200);
  await waitFor(
    async () => (await tollgate.admin('GET', '/tollgate/usage')).body.topKeys.length,
    (n) => n === 2,
  );
  // The embedded store takes usage every 500 ms: let the batch with these requests settle.
  await sleep(1_200);
  // Created after the traffic: a route would send it elsewhere.
  const sideResources: [string, object][] = [
    [
      '/tollgate/routes',
      { routeId: PLAN_ID, upstreamUrl: LONG_URL, match: { pathPrefix: LONG_PATH.slice(0, -1) } },
    ],
    [
      '/tollgate/webhooks',
      { url: LONG_URL, description: WORDY_NAME, events: ['key.created', 'quota.threshold'] },
    ],
    [
      '/tollgate/billing-exports',
      {
        type: 'cloudevents',
        url: LONG_URL,
        eventName: LONG_NAME.slice(0, 100),
        interval: 'day',
        subject: 'consumer',
      },
    ],
  ];
  for (const [path, body] of sideResources)
    expect((await tollgate.admin('POST', path, body)).status).toBe(201);
  // The most a balance holds, given after the traffic (which would have spent some).
  const credits = { remaining: Number.MAX_SAFE_INTEGER, refill: null, lowAt: 1_000_000 };
  expect((await tollgate.admin('PATCH', `/consumer-api-key/${keyId}`, { credits })).status).toBe(200);
});
const tab = signedInTab(suite, () => tollgate.rootToken);

/** Within the viewport, and still accessible as laid out at this width (tables as cards on a phone). */
async function expectWithinViewport(s: ConsoleSession): Promise<void> {
  expect(await seriousAccessibilityViolations(s.page)).toEqual([]);
  const found = await overflow(s.page);
  expect(found.past).toEqual([]);
  expect(found.scrollWidth).toBeLessThanOrEqual(found.width);
  // The frame's own controls stay reachable.
  const signOut = await s.page.getByRole('button', { name: 'Sign out' }).boundingBox();
  expect(signOut!.x + signOut!.width).toBeLessThanOrEqual(found.width);
}

/** A dialog wholly inside the viewport, nothing in it cut off, and the page around it as above. */
async function expectDialogEntirelyVisible(s: ConsoleSession, dialog: Locator): Promise<void> {
  const fit = await dialog.evaluate((el) => {
    const box = el.getBoundingClientRect();
    return {
      inside: box.left >= 0 && box.top >= 0 && box.right <= innerWidth && box.bottom <= innerHeight,
      clipped: el.scrollWidth > el.clientWidth,
    };
  });
  expect(fit).toEqual({ inside: true, clipped: false });
  await expectWithinViewport(s);
}

/** The full text is in the page (wrapped, never cut). */
const shows = (s: ConsoleSession, text: string) => s.page.getByText(text, { exact: true }).first().waitFor();

/** Each test of the enclosing describe sees the page at that size. */
const sizedTo = (width: number, height: number) =>
  beforeEach(async () => {
    await tab.session.page.setViewportSize({ width, height });
  });

describe.each([
  [390, 844],
  [1280, 900],
  [1440, 900],
  [1920, 1080],
])('at %i × %i px', (width, height) => {
  sizedTo(width, height);

  it('keeps the overview, the key list, the plans and the audit log within the viewport', async () => {
    const s = tab.session;
    await visit(s, '', 'Overview');
    await s.page.getByRole('region', { name: 'Top keys' }).getByRole('link', { name: LONG_NAME }).waitFor();
    await expectWithinViewport(s);

    await visit(s, 'keys', 'Keys');
    await s.page.waitForFunction(() => document.querySelectorAll('td.sparkline-cell svg').length === 2);
    await shows(s, LONG_NAME);
    await shows(s, LONG_EXTERNAL_ID);
    await shows(s, WORDY_NAME);
    await expectWithinViewport(s);

    await visit(s, 'plans', 'Plans');
    await shows(s, PLAN_ID);
    await expectWithinViewport(s);

    await visit(s, 'audit', 'Audit log');
    await s.page.locator('tbody tr[data-audit-id]').nth(3).waitFor();
    await shows(s, WORDY_NAME);
    for (const summary of await s.page.getByText('Details', { exact: true }).all()) await summary.click();
    await expectWithinViewport(s);
  });

  it('keeps the consumers, a consumer, the routes, webhooks, billing exports and admin tokens within the viewport', async () => {
    const s = tab.session;
    await visit(s, 'consumers', 'Consumers');
    await shows(s, WORDY_NAME);
    await shows(s, LONG_EXTERNAL_ID);
    await expectWithinViewport(s);
    await visit(s, `consumers/${consumerId}`, WORDY_NAME);
    await shows(s, LONG_EXTERNAL_ID);
    await shows(s, 'Refills to 1,000 on day 31 of each month, 00:00 UTC (a shorter month’s last day)');
    await expectWithinViewport(s);
    await visit(s, 'routes', 'Routes');
    await shows(s, LONG_URL);
    await expectWithinViewport(s);
    await visit(s, 'webhooks', 'Webhooks');
    await shows(s, LONG_URL);
    await expectWithinViewport(s);
    await visit(s, 'billing-exports', 'Billing exports');
    await shows(s, LONG_URL);
    await expectWithinViewport(s);
    await visit(s, 'admin-tokens', 'Admin tokens');
    await expectWithinViewport(s);
  });

  it("keeps a key's page within the viewport, its Endpoints and Customers tables each in its own column", async () => {
    const s = tab.session;
    await visit(s, `keys/${keyId}`, LONG_NAME);
    const endpoints = s.page.getByRole('region', { name: 'Endpoints' });
    const customers = s.page.getByRole('region', { name: 'Customers' });
    await endpoints.getByRole('cell', { name: LONG_PATH }).waitFor();
    await customers.getByRole('cell', { name: LONG_CUSTOMER }).waitFor();
    await shows(s, LONG_EXTERNAL_ID);
    await shows(s, '9,007,199,254,740,991');
    await expectWithinViewport(s);
    const box = async (region: typeof endpoints, part: string) =>
      (await region.locator(part).first().boundingBox())!;
    const [endpointTable, endpointRegion, customerRegion] = [
      await box(endpoints, 'table'),
      await box(endpoints, 'xpath=.'),
      await box(customers, 'xpath=.'),
    ];
    // The table stays inside its own column, and the two columns do not overlap.
    expect(endpointTable.x + endpointTable.width).toBeLessThanOrEqual(
      endpointRegion.x + endpointRegion.width + 0.5,
    );
    const sideBySide = endpointRegion.x + endpointRegion.width <= customerRegion.x + 0.5;
    const stacked = endpointRegion.y + endpointRegion.height <= customerRegion.y + 0.5;
    expect(sideBySide || stacked).toBe(true);
  });

  it('shows the credits dialogs entirely', async () => {
    const s = tab.session;
    await visit(s, `consumers/${consumerId}`, WORDY_NAME);
    for (const [button, title] of [
      ['Top up…', 'Top up or set the balance'],
      ['Balance and refill…', 'Balance and refill'],
    ]) {
      await s.page.getByRole('button', { name: button }).click();
      const dialog = s.page.getByRole('dialog', { name: title });
      await dialog.waitFor();
      await expectDialogEntirelyVisible(s, dialog);
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
    }
  });

  it('shows the roll dialog entirely, before and after the roll', async () => {
    const s = tab.session;
    await visit(s, `keys/${keyId}`, LONG_NAME);
    await s.page.getByRole('button', { name: 'Roll secret…' }).click();
    const dialog = s.page.getByRole('dialog', { name: 'Roll the secret' });
    const entirelyVisible = () => expectDialogEntirelyVisible(s, dialog);
    await entirelyVisible();
    await dialog.getByLabel('1 hour').check();
    await dialog.getByRole('button', { name: 'Roll secret' }).click();
    await dialog.getByRole('button', { name: 'Done' }).waitFor();
    await entirelyVisible();
    await dialog.getByRole('button', { name: 'Done' }).click();
  });
});

/** Words of table cells (up to 10 characters: a state, "never", an address, a date) drawn over two lines. */
async function brokenShortWords(s: ConsoleSession): Promise<string[]> {
  return s.page.evaluate(() => {
    const broken: string[] = [];
    for (const cell of document.querySelectorAll('table.data td')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const text = node.textContent ?? '';
        for (const word of text.matchAll(/\S+/g)) {
          if (word[0].length > 10) continue;
          const range = document.createRange();
          range.setStart(node, word.index);
          range.setEnd(node, word.index + word[0].length);
          const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          if (lines.size > 1) broken.push(word[0]);
        }
      }
    }
    return broken;
  });
}

describe.each([
  [1280, 900],
  [1920, 1080],
])('at %i × %i px, beside 200-character names', (width, height) => {
  sizedTo(width, height);

  it('keeps short words of table cells whole, and the page as wide as the screen allows', async () => {
    const s = tab.session;
    await visit(s, 'keys', 'Keys');
    await shows(s, LONG_NAME);
    await s.page.waitForFunction(() => document.querySelectorAll('td.sparkline-cell svg').length === 2);
    expect(await brokenShortWords(s)).toEqual([]);
    const main = await s.page.locator('main').boundingBox();
    expect(main!.width).toBeGreaterThan(width - 100);
    await visit(s, 'audit', 'Audit log');
    await s.page.locator('tbody tr[data-audit-id]').nth(3).waitFor();
    expect(await brokenShortWords(s)).toEqual([]);
    await expectWithinViewport(s);
  });
});
