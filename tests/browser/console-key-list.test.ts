/**
 * The key list and key creation in the console, in Chromium against a built Tollgate (Postgres, Redis,
 * a real backend): one page of keys at a time, newest first, with sparklines fetched for the visible
 * rows only (so 100,000 keys cost what 50 do), the filters, and a new key whose secret is shown once
 * and copied. Every check compares what the page shows with what the management API answers.
 */
import { hit } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  clipboardText,
  consoleSuite,
  rowWith,
  signedInTab,
  visit,
  type ConsoleSession,
} from './helpers/console-browser.js';

let tollgate: Tollgate;
const ids: Record<string, string> = {};
let aliceSecret = '';

const suite = consoleSuite(async (started) => {
  tollgate = started;
  const admin = tollgate.admin.bind(tollgate);
  expect(
    (
      await admin('POST', '/rate-limit/create', {
        rateLimitId: 'gold',
        description: 'Gold',
        limit: 1000,
        period: 'day',
      })
    ).status,
  ).toBe(201);
  expect(
    (await admin('POST', '/rate-limit/create', { rateLimitId: 'free', limit: 3, period: 'minute' })).status,
  ).toBe(201);
  const named = [
    { name: 'alpha-1', rateLimitId: 'gold', externalId: 'cus_1' },
    { name: 'alpha-2', rateLimitId: 'free', enabled: false },
    { name: 'beta-1', externalId: 'cus_2' },
  ];
  for (const body of named) {
    const created = await admin('POST', '/consumer-api-key/create', body);
    expect(created.status).toBe(201);
    ids[body.name] = created.body.id;
    if (body.name === 'alpha-1') aliceSecret = created.body.secret;
  }
  // 120 keys in all: three pages of 50.
  for (let i = 0; i < 117; i += 13) {
    await Promise.all(
      Array.from({ length: Math.min(13, 117 - i) }, (_, j) =>
        admin('POST', '/consumer-api-key/create', { name: `bulk-${String(i + j).padStart(3, '0')}` }),
      ),
    );
  }
  for (let i = 0; i < 4; i++) expect(await hit(tollgate, aliceSecret, '/v1/orders')).toBe(200);
});
const tab = signedInTab(suite, () => tollgate.rootToken);

/** The key ids of the table's rows, in order. */
const listedIds = (s: ConsoleSession) =>
  s.page
    .locator('tbody tr[data-key-id]')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key-id')!));

/** Waits until every visible row drew its sparkline (or said why it could not). */
async function sparklinesDrawn(s: ConsoleSession, rows: number): Promise<void> {
  await s.page.waitForFunction((n) => document.querySelectorAll('td.sparkline-cell svg').length === n, rows);
}

const usageRequests = (s: ConsoleSession) =>
  s.requests.filter((u) => /\/consumer-api-key\/[^/?]+\/usage\?/.test(u));

it('shows one page of 50 keys at a time, newest first, with sparklines fetched for the visible keys only', async () => {
  const all = await tollgate.admin('GET', '/consumer-api-key?limit=1000&sort=-createdAt');
  const everyId = (all.body.apiKeys as { consumerApiKeyId: string }[]).map((k) => k.consumerApiKeyId);
  expect(everyId).toHaveLength(120);

  await tab.session.page.getByRole('link', { name: 'Keys', exact: true }).click();
  await tab.session.page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
  const seen: string[] = [];
  for (const [page, size, count] of [
    [1, 50, 'Keys 1–50 of 120'],
    [2, 50, 'Keys 51–100 of 120'],
    [3, 20, 'Keys 101–120 of 120'],
  ] as const) {
    await tab.session.page.getByText(`Page ${page}`, { exact: true }).waitFor();
    // Until the page has loaded, the previous page's rows are still on screen.
    await tab.session.page.locator('nav[aria-label="Keys pages"][aria-busy="false"]').waitFor();
    await tab.session.page.waitForFunction(
      (n) => document.querySelectorAll('tbody tr[data-key-id]').length === n,
      size,
    );
    // How many keys there are, as the API counts them.
    await tab.session.page.getByText(count, { exact: true }).waitFor();
    await sparklinesDrawn(tab.session, size);
    const onPage = await listedIds(tab.session);
    seen.push(...onPage);
    // Every sparkline request so far names a key that was on screen when it was made.
    expect(
      new Set(
        usageRequests(tab.session).map((u) =>
          decodeURIComponent(/consumer-api-key\/([^/]+)\/usage/.exec(u)![1]!),
        ),
      ),
    ).toEqual(new Set(seen));
    const next = tab.session.page.getByRole('button', { name: 'Next page' });
    if (page < 3) await next.click();
    else expect(await next.isDisabled()).toBe(true);
  }
  expect(seen).toEqual(everyId);
  expect(usageRequests(tab.session)).toHaveLength(120);
  // The list was read 50 at a time, never more.
  const listLimits = tab.session.requests
    .filter((u) => /\/consumer-api-key\?/.test(u))
    .map((u) => new URL(u).searchParams.get('limit'));
  expect(new Set(listLimits)).toEqual(new Set(['50']));

  // The page is in the address: a reload stays on it, and Previous still goes back.
  expect(tab.session.page.url()).toMatch(/#\/keys\?cursors=[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  await tab.session.page.reload();
  await tab.session.page.getByText('Page 3', { exact: true }).waitFor();
  await tab.session.page.getByText('Keys 101–120 of 120', { exact: true }).waitFor();
  expect(await listedIds(tab.session)).toEqual(everyId.slice(100));
  await tab.session.page.getByRole('button', { name: 'Previous page' }).click();
  await tab.session.page.getByText('Page 2', { exact: true }).waitFor();
  await tab.session.page.locator('nav[aria-label="Keys pages"][aria-busy="false"]').waitFor();
  await tab.session.page.waitForFunction(
    () => document.querySelectorAll('tbody tr[data-key-id]').length === 50,
  );
  expect(await listedIds(tab.session)).toEqual(everyId.slice(50, 100));
});

it("shows each key's state, plan, owner, last use and 24-hour requests as the API reports them", async () => {
  // Oldest first: the named keys, created before the bulk, are on the first page.
  await visit(tab.session, 'keys?sort=createdAt', 'Keys');
  await sparklinesDrawn(tab.session, 50);
  const detail = await tollgate.admin('GET', `/consumer-api-key/${ids['alpha-1']}`);
  const hourly = await tollgate.admin('GET', `/consumer-api-key/${ids['alpha-1']}/usage?granularity=hour`);
  const requests24h = (hourly.body.buckets as { requests: number }[]).reduce((s, b) => s + b.requests, 0);
  expect(requests24h).toBe(4);
  expect(detail.body.lastUsedAt).not.toBeNull();

  const alpha1 = rowWith(tab.session.page, 'alpha-1');
  expect(await alpha1.getByRole('cell').allInnerTexts()).toEqual([
    expect.stringContaining('alpha-1'),
    'Active',
    'gold',
    'cus_1',
    expect.stringMatching(/ago$|^just now$/),
    expect.stringMatching(/UTC$/),
    expect.stringContaining('4'),
  ]);
  expect(await alpha1.getByRole('img').getAttribute('aria-label')).toBe('4 requests in 24 h');
  const alpha2 = rowWith(tab.session.page, 'alpha-2');
  expect(await alpha2.getByRole('cell').nth(1).innerText()).toBe('Disabled');
  expect(await alpha2.getByRole('cell').nth(4).innerText()).toBe('never');
  // The name links to the key's page.
  await alpha1.getByRole('link', { name: 'alpha-1' }).click();
  await tab.session.page.getByRole('heading', { level: 1, name: 'alpha-1' }).waitFor();
  expect(tab.session.page.url()).toBe(`${tab.session.consoleUrl}#/keys/${ids['alpha-1']}`);
});

it('filters by name in any case, state, plan and external id exactly as the API does', async () => {
  await visit(tab.session, 'keys', 'Keys');
  const { page } = tab.session;
  const apply = async (fill: () => Promise<void>, query: string) => {
    await fill();
    await page.getByRole('button', { name: 'Search' }).click();
    const expected = (
      (await tollgate.admin('GET', `/consumer-api-key?limit=50&sort=-createdAt&${query}`)).body.apiKeys as {
        consumerApiKeyId: string;
      }[]
    ).map((k) => k.consumerApiKeyId);
    await page.waitForFunction(
      (want) =>
        [...document.querySelectorAll('tbody tr[data-key-id]')]
          .map((r) => r.getAttribute('data-key-id'))
          .join() === want.join(),
      expected,
    );
    return expected;
  };
  expect(await apply(() => page.getByLabel('Name, key id or secret').fill('ALPHA'), 'name=alpha')).toEqual([
    ids['alpha-2'],
    ids['alpha-1'],
  ]);
  expect(
    await apply(
      () =>
        page
          .getByLabel('State')
          .selectOption('false')
          .then(() => undefined),
      'name=alpha&enabled=false',
    ),
  ).toEqual([ids['alpha-2']]);
  expect(page.url()).toContain('#/keys?name=ALPHA&enabled=false');
  await page.getByRole('button', { name: 'Clear' }).click();
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-key-id]').length === 50);
  expect(await apply(() => page.getByLabel('Plan').fill('gold'), 'rateLimitId=gold')).toEqual([
    ids['alpha-1'],
  ]);
  await page.getByLabel('Plan').fill('');
  expect(await apply(() => page.getByLabel('External ID').fill('cus_2'), 'externalId=cus_2')).toEqual([
    ids['beta-1'],
  ]);
  await page.getByLabel('External ID').fill('nobody');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No key matches.').waitFor();
});

it('creates a key with its settings and opens its page, with the secret to copy', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'keys', 'Keys');
  await page.getByRole('link', { name: 'Create key' }).click();
  await page.getByRole('heading', { level: 1, name: 'Create a key' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('mobile-app');
  await page.getByLabel('External ID (optional)').fill('cus_42');
  await page.getByLabel('Plan').selectOption('gold');
  await page.getByLabel('Expires at (UTC, optional)').fill('2099-01-02T03:04:05');
  await page.getByLabel('Metadata (JSON object)').fill('{"tier": "gold", "seats": 5}');
  await page.getByRole('button', { name: 'Create key' }).click();
  // The new key's own page: found at once, wherever the list (oldest first) puts it.
  await page.getByRole('heading', { level: 1, name: 'mobile-app' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'The key is created. Copy its secret now' }).waitFor();
  const id = /#\/keys\/(key_[A-Za-z0-9_-]+)$/.exec(page.url())![1]!;

  const secretField = page.getByLabel('Secret of the new key');
  const secret = await secretField.inputValue();
  expect(secret).toMatch(/^tg_[0-9A-Za-z]{36}$/);
  // The page shows the secret again (under Details): it does not claim to show it once.
  expect(await page.getByText(/shown once/i).count()).toBe(0);
  await page.locator('.created').getByRole('button', { name: 'Copy' }).click();
  await page.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
  expect(await clipboardText(page)).toBe(secret);

  const detail = await tollgate.admin('GET', `/consumer-api-key/${id}`);
  expect(detail.body).toMatchObject({
    name: 'mobile-app',
    secret,
    externalId: 'cus_42',
    rateLimitId: 'gold',
    enabled: true,
    expiresAt: '2099-01-02T03:04:05Z',
    metadata: { tier: 'gold', seats: 5 },
  });
  expect(await hit(tollgate, secret)).toBe(200);
  // The secret lives on this page only: not in the address, not in storage.
  expect(tab.session.navigations.some((u) => u.includes(secret))).toBe(false);
  expect(await page.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }))).not.toContain(
    secret,
  );

  // A reload shows the key's page without the new secret's panel: it was for this moment only.
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'mobile-app' }).waitFor();
  expect(await page.getByLabel('Secret of the new key').count()).toBe(0);
  // The list, read afresh, holds it where an administrator looks: first (newest first), and by its name.
  await page.getByRole('link', { name: 'Keys', exact: true }).click();
  await page.getByText('Keys 1–50 of 121', { exact: true }).waitFor();
  expect(await page.locator('tbody tr[data-key-id]').first().getAttribute('data-key-id')).toBe(id);
  await page.getByLabel('Name, key id or secret').fill('Mobile-App');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.locator(`tbody tr[data-key-id="${id}"]`).waitFor();
  await page.getByText('1 key', { exact: true }).waitFor();
});

it('warns of an expiry already past before the key is created, and creates it expired once confirmed', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'keys/new', 'Create a key');
  await page.getByLabel('Name', { exact: true }).fill('born-expired');
  await page.getByLabel('Expires at (UTC, optional)').fill('2020-02-03T04:05:06');
  await page.getByRole('alert').filter({ hasText: 'This instant is already past' }).waitFor();
  const created: string[] = [];
  page.on('request', (r) => {
    if (r.method() === 'POST') created.push(r.url());
  });
  await page.getByRole('button', { name: 'Create key' }).click();
  expect(await page.getByLabel('Expire the key at once').evaluate((box) => box.matches(':invalid'))).toBe(
    true,
  );
  await page.getByRole('heading', { level: 1, name: 'Create a key' }).waitFor();
  expect(created).toEqual([]);
  // A future instant: no warning.
  await page.getByLabel('Expires at (UTC, optional)').fill('2099-02-03T04:05:06');
  await page.getByRole('alert').waitFor({ state: 'detached' });
  await page.getByLabel('Expires at (UTC, optional)').fill('2020-02-03T04:05:06');
  await page.getByLabel('Expire the key at once').check();
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('heading', { level: 1, name: 'born-expired' }).waitFor();
  expect(created).toHaveLength(1);
  await page
    .getByRole('heading', { level: 1, name: 'born-expired' })
    .locator('..')
    .getByText('Expired', { exact: true })
    .waitFor();
});

it('says what the API refused when creating a key fails, and keeps what was typed', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'keys/new', 'Create a key');
  await page.getByLabel('Name', { exact: true }).fill('x'.repeat(10));
  await page.getByLabel('Metadata (JSON object)').fill('[1, 2]');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('alert').filter({ hasText: 'Metadata must be a JSON object' }).waitFor();
  // A metadata object over the API's 8 KiB: the API refuses it, and its message is what the user reads.
  await page.getByLabel('Metadata (JSON object)').fill(JSON.stringify({ blob: 'y'.repeat(9000) }));
  await page.getByRole('button', { name: 'Create key' }).click();
  const refused = await tollgate.admin('POST', '/consumer-api-key/create', {
    name: 'x',
    metadata: { blob: 'y'.repeat(9000) },
  });
  expect(refused.status).toBe(400);
  expect(refused.body.details).toEqual([
    { field: 'metadata', message: 'must be at most 8192 bytes as JSON' },
  ]);
  // The field as the form labels it, said once.
  const alert = page.getByRole('alert');
  await alert.getByText('Some values need a change:').waitFor();
  expect(await alert.getByRole('listitem').allInnerTexts()).toEqual([
    'Metadata: must be at most 8192 bytes as JSON.',
  ]);
  expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('x'.repeat(10));
});
