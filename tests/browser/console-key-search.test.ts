/**
 * Finding keys in the console (docs/guides/console.md, docs/guides/keys.md), in Chromium against a built Tollgate with real
 * traffic through a real backend: newest first by default with the API's count, sorted by last use and
 * by 24-hour traffic exactly as the API sorts, a name found in any case, a key opened by its id, and a
 * key found by a pasted secret that goes in a request body and never into an address.
 */
import { hit, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  consoleSuite,
  seriousAccessibilityViolations,
  signedInTab,
  visit,
  type ConsoleSession,
} from './helpers/console-browser.js';

let tollgate: Tollgate;
const keys: Record<string, { id: string; secret: string }> = {};
let previousSecret = '';

const suite = consoleSuite(async (started) => {
  tollgate = started;
  const create = async (name: string) => {
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name });
    expect(created.status).toBe(201);
    keys[name] = created.body;
  };
  // 60 keys in parallel batches, then the named ones: 64 in all.
  for (let i = 0; i < 60; i += 20)
    await Promise.all(Array.from({ length: 20 }, (_, j) => create(`bulk-${String(i + j).padStart(2, '0')}`)));
  for (const name of ['Alpha one', 'ALPHA two', 'alphabet', 'beta']) await create(name);
  // Traffic: beta the most, then alphabet, then Alpha one, which is used last.
  for (const [name, count] of [
    ['beta', 5],
    ['alphabet', 2],
    ['Alpha one', 1],
  ] as const) {
    for (let i = 0; i < count; i++) expect(await hit(tollgate, keys[name]!.secret)).toBe(200);
  }
  const rolled = await tollgate.admin('POST', `/consumer-api-key/${keys['ALPHA two']!.id}/roll`, {
    gracePeriodSeconds: 86_400,
  });
  previousSecret = keys['ALPHA two']!.secret;
  keys['ALPHA two']!.secret = rolled.body.secret;
  await waitFor(
    async () =>
      (await tollgate.admin('GET', '/consumer-api-key?sort=-requests24h&limit=3')).body.apiKeys.map(
        (k: { name: string }) => k.name,
      ),
    (names) => names.join() === 'beta,alphabet,Alpha one',
  );
  await waitFor(
    async () => (await tollgate.admin('GET', `/consumer-api-key/${keys['Alpha one']!.id}`)).body.lastUsedAt,
    (at) => at !== null,
  );
});
const tab = signedInTab(suite, () => tollgate.rootToken);

const listedIds = (s: ConsoleSession) =>
  s.page
    .locator('tbody tr[data-key-id]')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key-id')!));

/** The key ids the API lists for `query`, in its order. */
const apiOrder = async (query: string): Promise<string[]> =>
  (
    (await tollgate.admin('GET', `/consumer-api-key?${query}`)).body.apiKeys as { consumerApiKeyId: string }[]
  ).map((k) => k.consumerApiKeyId);

async function rowsAre(s: ConsoleSession, ids: readonly string[]): Promise<void> {
  await s.page.locator('nav[aria-label="Keys pages"][aria-busy="false"]').waitFor();
  await s.page.waitForFunction(
    (want) =>
      [...document.querySelectorAll('tbody tr[data-key-id]')]
        .map((r) => r.getAttribute('data-key-id'))
        .join() === want.join(),
    ids,
  );
}

it('lists the newest key first, and says how many keys there are as the API counts them', async () => {
  const { page } = tab.session;
  await page.getByRole('link', { name: 'Keys', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
  const newest = await apiOrder('sort=-createdAt&limit=50');
  expect(newest[0]).toBe(keys.beta!.id);
  await rowsAre(tab.session, newest);
  expect((await tollgate.admin('GET', '/consumer-api-key?count=true&limit=1')).body.total).toEqual({
    count: 64,
    exact: true,
  });
  await page.getByText('Keys 1–50 of 64', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Next page' }).click();
  const first = await tollgate.admin('GET', '/consumer-api-key?sort=-createdAt&limit=50');
  await rowsAre(tab.session, await apiOrder(`sort=-createdAt&limit=50&cursor=${first.body.nextCursor}`));
  await page.getByText('Keys 51–64 of 64', { exact: true }).waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
});

it('sorts by last use and by traffic exactly as the API does as soon as the order is chosen, kept in the address', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'keys', 'Keys');
  // The order applies as it is chosen, without pressing Search.
  await page.getByLabel('Order').selectOption({ label: 'Used most recently' });
  const byUse = await apiOrder('sort=-lastUsedAt&limit=50');
  expect(byUse.slice(0, 3)).toEqual([keys['Alpha one']!.id, keys.alphabet!.id, keys.beta!.id]);
  await rowsAre(tab.session, byUse);
  expect(page.url()).toContain('#/keys?sort=-lastUsedAt');

  await page.getByLabel('Order').selectOption({ label: 'Most requests, 24 hours' });
  const byTraffic = await apiOrder('sort=-requests24h&limit=50');
  expect(byTraffic.slice(0, 3)).toEqual([keys.beta!.id, keys.alphabet!.id, keys['Alpha one']!.id]);
  await rowsAre(tab.session, byTraffic);
  // Each sparkline says what the order counts.
  const busiest = page.locator(`tbody tr[data-key-id="${keys.beta!.id}"]`);
  expect(await busiest.getByRole('img').getAttribute('aria-label')).toBe('5 requests in 24 h');
  // Page 2 continues the same order: every key once over both pages.
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.getByText('Keys 51–64 of 64', { exact: true }).waitFor();
  const second = await listedIds(tab.session);
  expect(new Set([...byTraffic, ...second]).size).toBe(64);
  await page.reload();
  await page.getByText('Keys 51–64 of 64', { exact: true }).waitFor();
  expect(await listedIds(tab.session)).toEqual(second);
  expect(await page.getByLabel('Order').inputValue()).toBe('-requests24h');
});

it('finds keys by the start of their name in any case', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'keys', 'Keys');
  const search = page.getByLabel('Name, key id or secret');
  await search.fill('alpha');
  await page.getByRole('button', { name: 'Search' }).click();
  await rowsAre(tab.session, await apiOrder('name=alpha&sort=-createdAt'));
  expect((await listedIds(tab.session)).length).toBe(3);
  await page.getByText('3 keys', { exact: true }).waitFor();
  expect(page.url()).toContain('name=alpha');
  await search.fill('ALPHA T');
  await page.getByRole('button', { name: 'Search' }).click();
  await rowsAre(tab.session, [keys['ALPHA two']!.id]);
  await search.fill('nobody-has-this-name');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No key matches.').waitFor();
});

it('opens a key by its id', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'keys', 'Keys');
  await page.getByLabel('Name, key id or secret').fill(keys.alphabet!.id);
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('heading', { level: 1, name: 'alphabet' }).waitFor();
  expect(page.url()).toBe(`${tab.session.consoleUrl}#/keys/${keys.alphabet!.id}`);
});

it('finds a key by a pasted secret sent in a body, never in an address, current or previous', async () => {
  const { page } = tab.session;
  const bodies: string[] = [];
  page.on('request', (r) => {
    if (r.method() === 'POST') bodies.push(`${new URL(r.url()).pathname} ${r.postData() ?? ''}`);
  });
  await visit(tab.session, 'keys', 'Keys');
  const search = page.getByLabel('Name, key id or secret');
  await search.fill(keys.beta!.secret);
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('heading', { level: 1, name: 'beta' }).waitFor();
  await page
    .getByRole('status')
    .filter({ hasText: 'Found by its secret: the key beta, whose current secret it is.' })
    .waitFor();
  expect(bodies).toEqual([`/tollgate/keys/lookup ${JSON.stringify({ secret: keys.beta!.secret })}`]);

  // The secret of before a roll names its key too, and until when it works.
  await visit(tab.session, 'keys', 'Keys');
  await page.getByLabel('Name, key id or secret').fill(previousSecret);
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('heading', { level: 1, name: 'ALPHA two' }).waitFor();
  await page
    .getByRole('status')
    .filter({ hasText: /whose previous secret it is .* working until \d{4}-/ })
    .waitFor();

  // A secret no key has: said plainly, and the field emptied.
  await visit(tab.session, 'keys', 'Keys');
  await page.getByLabel('Name, key id or secret').fill('tg_' + 'Q'.repeat(43));
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('alert').filter({ hasText: 'No key has that secret' }).waitFor();
  expect(await page.getByLabel('Name, key id or secret').inputValue()).toBe('');

  for (const secret of [keys.beta!.secret, previousSecret]) {
    expect(tab.session.requests.filter((u) => u.includes(secret))).toEqual([]);
    expect(tab.session.navigations.filter((u) => u.includes(secret))).toEqual([]);
  }
  expect(await page.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }))).not.toContain(
    'tg_',
  );
});

it('keeps what is typed into the search field before the page first paints', async () => {
  const { page } = tab.session;
  await visit(tab.session, `keys/${keys.beta!.id}`, 'beta');
  // Types into the field the moment it is in the page, before the browser has painted it once.
  const typedEarly = page.evaluate(
    () =>
      new Promise<void>((resolve) => {
        const observer = new MutationObserver(() => {
          const field = document.getElementById('f-search') as HTMLInputElement | null;
          if (field === null) return;
          observer.disconnect();
          field.value = 'alpha';
          field.dispatchEvent(new Event('input', { bubbles: true }));
          resolve();
        });
        observer.observe(document.body, { childList: true, subtree: true });
        location.hash = '#/keys';
      }),
  );
  await typedEarly;
  // Two frames on, whatever the first render left to do after painting has run.
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  expect(await page.getByLabel('Name, key id or secret').inputValue()).toBe('alpha');
});

it('finds a key by a secret pasted with what surrounded it, and keeps part of a secret out of every address', async () => {
  const { page } = tab.session;
  const lookups: string[] = [];
  page.on('request', (r) => {
    if (r.method() === 'POST') lookups.push(r.postData() ?? '');
  });
  const secret = keys.alphabet!.secret;
  for (const pasted of [`Bearer ${secret}`, `"${secret}"`, `x-api-key: ${secret}`]) {
    await visit(tab.session, 'keys', 'Keys');
    await page.getByLabel('Name, key id or secret').fill(pasted);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('heading', { level: 1, name: 'alphabet' }).waitFor();
    await page
      .getByRole('status')
      .filter({ hasText: 'Found by its secret: the key alphabet, whose current secret it is.' })
      .waitFor();
  }
  expect(lookups).toEqual(Array.from({ length: 3 }, () => JSON.stringify({ secret })));

  // A secret cut short is searched for nowhere, and said to be one.
  await visit(tab.session, 'keys', 'Keys');
  const cut = `Bearer ${secret.slice(0, 30)}`;
  await page.getByLabel('Name, key id or secret').fill(cut);
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('alert').filter({ hasText: 'This looks like part of a secret' }).waitFor();
  expect(await page.getByLabel('Name, key id or secret').inputValue()).toBe('');
  expect(lookups.length).toBe(3);

  const part = secret.slice(3, 30);
  expect(tab.session.requests.filter((u) => decodeURIComponent(u).includes(part))).toEqual([]);
  expect(tab.session.navigations.filter((u) => decodeURIComponent(u).includes(part))).toEqual([]);
  expect(page.url()).not.toContain('name=');
});
