/**
 * The failure log in the console, in Chromium against a built Tollgate on Postgres and Redis: real
 * requests through the proxy fail (a limit's 429, a backend's 503 and 500s, more than 100 in a minute),
 * and a key's and a consumer's pages show them newest first with every field, filter them by code,
 * find one by request id (never taking a pasted secret into the address), page with the cursor, say
 * how many were left out, and download the API's CSV. axe finds nothing serious at 1280 px, and the
 * table fits the page.
 */
import type { Page } from 'playwright-core';
import { consumerWithKeys, hit, waitFor, type Account } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { HOUR_MS, MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import {
  consoleSuite,
  downloadedText,
  rowWith,
  seriousAccessibilityViolations,
  signedInTab,
  visit,
} from './helpers/console-browser.js';

let tollgate: Tollgate;
let account: Account;
/** The request ids the clients got. */
const sent = { limited: '', backend: 'support-ticket-503', failedFast: [] as string[] };

/** A proxied request's status and the request id its client got. */
async function proxied(secret: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(tollgate.url + path, {
    headers: { authorization: `Bearer ${secret}`, ...headers },
  });
  await res.arrayBuffer();
  return { status: res.status, requestId: res.headers.get('x-request-id')! };
}

/** How many failures the API lists for a key now (they travel with the usage batches). */
async function listed(keyId: string): Promise<number> {
  const page = await tollgate.admin('GET', `/consumer-api-key/${keyId}/failures?limit=1000`);
  return (page.body as { failures: unknown[] }).failures.length;
}

const clock = new TestClock();
const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    // The first key has a plan of its own: 2 requests an hour. Its clock stands at an hour's start.
    account = await consumerWithKeys(tollgate, 'acme', { keys: 2, keyLimit: 2, period: 'hour' });
    const [limited, busy] = account.keys as [Account['keys'][0], Account['keys'][0]];
    clock.after(HOUR_MS, 1_000);
    expect((await proxied(limited.secret, '/status/503', { 'x-request-id': sent.backend })).status).toBe(503);
    expect(await hit(tollgate, limited.secret, '/v1/search')).toBe(200);
    const { value: refused } = await waitFor(
      () => proxied(limited.secret, '/v1/search?q=private-query', { 'x-customer-id': 'cus_7' }),
      (reply) => reply.status !== 200,
    );
    expect(refused.status).toBe(429);
    sent.limited = refused.requestId;
    // The other key fails 105 times within one minute: 100 are kept, 5 left out.
    clock.after(MINUTE_MS, 100);
    for (let i = 0; i < 105; i += 15) {
      const replies = await Promise.all(
        Array.from({ length: 15 }, () => proxied(busy.secret, '/status/500')),
      );
      for (const reply of replies) expect(reply.status).toBe(500);
      sent.failedFast.push(...replies.map((r) => r.requestId));
    }
    await waitFor(
      async () => [await listed(limited.id), await listed(busy.id)],
      ([a, b]) => a === 2 && b === 100,
      { timeoutMs: 10_000 },
    );
  },
  180_000,
  clock.env,
);
const tab = signedInTab(suite, () => tollgate.rootToken);

const failures = (page: Page) => page.getByRole('region', { name: 'Failed requests' });
const failureRows = (page: Page) => failures(page).locator('tbody tr');

/** No part of the page is wider than the window. */
const overflow = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

it('shows a key’s failures newest first with every field, filters by code, finds a request id', async () => {
  const { page } = tab.session;
  const [limited] = account.keys;
  await visit(tab.session, `keys/${limited!.id}`, 'acme-0');
  await failureRows(page).nth(1).waitFor();
  expect(await failureRows(page).count()).toBe(2);
  // Newest first: the 429 came after the backend's 503.
  expect(
    await failureRows(page).evaluateAll((rows) => rows.map((r) => r.getAttribute('data-request-id'))),
  ).toEqual([sent.limited, sent.backend]);
  const cells = await rowWith(page, sent.limited).getByRole('cell').allInnerTexts();
  expect(cells).toEqual([
    expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/),
    sent.limited,
    'GET /v1/search\nroute (catch-all)',
    '429 rate_limit_exceeded',
    expect.stringMatching(/^\S+: 2 per hour \(key\)$/),
    '127.0.0.1\ncustomer cus_7',
    expect.stringMatching(/^\d+ ms$/),
  ]);
  expect(await rowWith(page, sent.backend).getByRole('cell').nth(3).innerText()).toBe('503 backend_error');
  await failures(page).getByText('Left out: none.').waitFor();
  expect(await page.locator('body').innerText()).not.toContain('private-query');
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  expect(await overflow(page)).toBeLessThanOrEqual(0);

  await failures(page).getByLabel('Code').selectOption('rate_limit_exceeded');
  await failures(page).getByRole('button', { name: 'Filter' }).click();
  await page.waitForFunction(() => new URL(location.href).hash.includes('failureCode=rate_limit_exceeded'));
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-request-id]').length === 1);
  expect(await failureRows(page).getAttribute('data-request-id')).toBe(sent.limited);

  await failures(page).getByRole('button', { name: 'Clear' }).click();
  // Cleared once both failures are listed again: the form takes the cleared address's filters then.
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-request-id]').length === 2);
  expect(await failures(page).getByLabel('Code').inputValue()).toBe('');
  await failures(page).getByLabel('Request id').fill(sent.backend);
  await failures(page).getByRole('button', { name: 'Filter' }).click();
  await page.waitForFunction(() => new URL(location.href).hash.includes('requestId=support-ticket-503'));
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-request-id]').length === 1);
  expect(await failureRows(page).getAttribute('data-request-id')).toBe(sent.backend);

  // A request id nothing failed under: none.
  await failures(page).getByLabel('Request id').fill('no-such-request');
  await failures(page).getByRole('button', { name: 'Filter' }).click();
  await failures(page).getByRole('status').filter({ hasText: 'No failure matches.' }).waitFor();
});

it('refuses a key’s secret pasted as a request id, and never puts it in the address or a request', async () => {
  const { page } = tab.session;
  const [limited] = account.keys;
  await visit(tab.session, `keys/${limited!.id}`, 'acme-0');
  await failureRows(page).first().waitFor();
  await failures(page).getByLabel('Request id').fill(`Bearer ${limited!.secret}`);
  await failures(page).getByRole('button', { name: 'Filter' }).click();
  await failures(page)
    .getByRole('alert')
    .filter({ hasText: 'That is a key’s secret, not a request id' })
    .waitFor();
  expect(await failureRows(page).count()).toBe(2);
  expect(page.url()).not.toContain(limited!.secret.slice(3));
  expect(tab.session.requests.filter((u) => u.includes(limited!.secret.slice(3)))).toEqual([]);
});

it('shows a consumer’s failures of all its keys, pages with the cursor, counts those left out, and downloads the CSV', async () => {
  const { page } = tab.session;
  await visit(tab.session, `consumers/${account.consumerId}`, 'acme');
  await failureRows(page).nth(49).waitFor();
  await failures(page).getByText('Left out: 5 more failures were counted but not kept').waitFor();
  await failures(page).getByText('Failures 1–50 of more than 50').waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  expect(await overflow(page)).toBeLessThanOrEqual(0);
  const seen: string[] = [];
  const ids = () =>
    failureRows(page).evaluateAll((rows) => rows.map((r) => r.getAttribute('data-request-id')!));
  seen.push(...(await ids()));
  // The key column links each failure to its key's page.
  expect(await failureRows(page).first().getByRole('link').getAttribute('href')).toBe(
    `#/keys/${account.keys[1]!.id}`,
  );

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    failures(page).getByRole('button', { name: 'Download CSV' }).click(),
  ]);
  expect(download.suggestedFilename()).toBe(`failures-${account.consumerId}.csv`);
  const csv = (await downloadedText(download)).trimEnd().split('\r\n');
  expect(csv[0]).toMatch(/^time,requestId,consumerApiKeyId,consumerId,method,path,routeId,status,code,/);
  const csvIds = csv.slice(1).map((line) => line.split(',')[1]!.replace(/^"|"$/g, ''));

  for (const pageNumber of [2, 3]) {
    await failures(page).getByRole('button', { name: 'Next page' }).click();
    await failures(page).getByText(`Page ${pageNumber}`, { exact: true }).waitFor();
    await page.waitForFunction(
      (first) =>
        document.querySelector('tbody tr[data-request-id]')?.getAttribute('data-request-id') !== first,
      seen[seen.length - 50],
    );
    await failures(page).locator('nav[aria-busy="false"]').waitFor();
    seen.push(...(await ids()));
  }
  expect(seen).toHaveLength(102);
  expect(new Set(seen).size).toBe(102);
  expect(seen.slice(-2)).toEqual([sent.limited, sent.backend]);
  expect(seen.filter((id) => sent.failedFast.includes(id))).toHaveLength(100);
  // The CSV held the same failures in the same order.
  expect(csvIds).toEqual(seen);
  expect(await failures(page).getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
  expect(tab.session.requests.filter((u) => u.includes(tollgate.rootToken))).toEqual([]);
});
