/**
 * Routes in the console, in Chromium against a built Tollgate: create one (host, prefix, methods, strip,
 * timeout), see it listed, edit it back to every host and method, refuse an overlapping one with the
 * API's reason, and delete it through a dialog that starts on Cancel. Checked through the API; axe clean.
 */
import type { Request } from 'playwright-core';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  consoleSuite,
  rowWith,
  seriousAccessibilityViolations,
  signedInTab,
  visit,
} from './helpers/console-browser.js';

let tollgate: Tollgate;

const suite = consoleSuite(async (started) => {
  tollgate = started;
});
const tab = signedInTab(suite, () => tollgate.rootToken);

const route = async (id: string) => tollgate.admin('GET', `/tollgate/routes/${id}`);

it('creates, lists, edits and deletes a route', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'routes', 'Routes');
  await page.getByText('No route yet').waitFor();
  await page.getByRole('link', { name: 'Create route' }).click();
  await page.getByRole('heading', { level: 1, name: 'Create a route' }).waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await page.getByLabel('Route id').fill('search');
  await page.getByLabel('Backend URL').fill('http://search.internal:8080');
  await page.getByLabel('Host').fill('api.example.com');
  await page.getByLabel('Path prefix').fill('/v1/search');
  const methods = page.getByRole('group', { name: 'Methods (none: every method)' });
  await methods.getByLabel('GET').check();
  await methods.getByLabel('POST').check();
  await page.getByLabel('Ignore case in the path').check();
  await page.getByLabel('Remove the prefix before forwarding').check();
  await page.getByLabel('Timeout (ms)').fill('2500');
  await page.getByRole('button', { name: 'Create route' }).click();
  await page.getByRole('heading', { level: 1, name: 'Routes' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'The route search is created.' }).waitFor();
  expect((await route('search')).body).toMatchObject({
    routeId: 'search',
    upstreamUrl: 'http://search.internal:8080',
    match: {
      host: 'api.example.com',
      pathPrefix: '/v1/search',
      methods: ['GET', 'POST'],
      caseInsensitive: true,
    },
    stripPrefix: true,
    timeoutMs: 2500,
  });
  const row = rowWith(page, 'search');
  // The list is read after the page shows: wait for its row before reading its cells.
  await row.getByRole('cell', { name: '2,500 ms', exact: true }).waitFor();
  expect(await row.getByRole('cell').allInnerTexts()).toEqual(
    expect.arrayContaining([
      'search',
      'api.example.com',
      'GET, POST',
      'http://search.internal:8080',
      '2,500 ms',
    ]),
  );
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  await row.getByRole('link', { name: 'Edit search' }).click();
  await page.getByRole('heading', { level: 1, name: 'Edit the route search' }).waitFor();
  expect(await page.getByLabel('Host').inputValue()).toBe('api.example.com');
  expect(await page.getByLabel('Ignore case in the path').isChecked()).toBe(true);
  await page.getByLabel('Ignore case in the path').uncheck();
  await page.getByLabel('Host').fill('');
  await methods.getByLabel('GET').uncheck();
  await methods.getByLabel('POST').uncheck();
  await page.getByLabel('Timeout (ms)').fill('');
  await page.getByLabel('Backend URL').fill('http://search2.internal:8080');
  const sent = page
    .waitForRequest(
      (r: Request) => r.method() === 'PATCH' && new URL(r.url()).pathname === '/tollgate/routes/search',
    )
    .then((r) => r.postDataJSON() as unknown);
  await page.getByRole('button', { name: 'Save route' }).click();
  expect(await sent).toEqual({
    upstreamUrl: 'http://search2.internal:8080',
    match: { host: null, pathPrefix: '/v1/search', methods: null, caseInsensitive: false },
    stripPrefix: true,
    timeoutMs: null,
  });
  await page.getByRole('status').filter({ hasText: 'The route search is saved.' }).waitFor();
  expect((await route('search')).body).toMatchObject({
    upstreamUrl: 'http://search2.internal:8080',
    match: { host: null, methods: null },
    timeoutMs: null,
  });
  await row.getByRole('cell', { name: 'default', exact: true }).waitFor();
  expect(await row.getByRole('cell').allInnerTexts()).toEqual(expect.arrayContaining(['any', 'default']));

  // Deleting starts on Cancel: Enter keeps the route.
  await row.getByRole('button', { name: 'Delete search' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete the route search?' });
  await dialog.waitFor();
  await page.waitForFunction(() => document.activeElement?.closest('dialog') !== null);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  expect((await route('search')).status).toBe(200);
  await row.getByRole('button', { name: 'Delete search' }).click();
  await dialog.getByRole('button', { name: 'Delete route' }).click();
  await page.getByRole('status').filter({ hasText: 'The route search is deleted' }).waitFor();
  await row.waitFor({ state: 'detached' });
  expect((await route('search')).status).toBe(404);
});

it('refuses a route that overlaps another with the API’s reason, and keeps the form', async () => {
  const first = await tollgate.admin('POST', '/tollgate/routes', {
    routeId: 'lookup',
    upstreamUrl: 'http://lookup.internal',
    match: { pathPrefix: '/v1/lookup' },
  });
  expect(first.status).toBe(201);
  const { page } = tab.session;
  await visit(tab.session, 'routes/new', 'Create a route');
  await page.getByLabel('Route id').fill('lookup-2');
  await page.getByLabel('Backend URL').fill('http://other.internal');
  await page.getByLabel('Path prefix').fill('/v1/lookup');
  await page.getByRole('button', { name: 'Create route' }).click();
  await page.getByRole('alert').waitFor();
  expect(await page.getByLabel('Route id').inputValue()).toBe('lookup-2');
  expect((await route('lookup-2')).status).toBe(404);
});

it('says what a backend URL and a path prefix must be, and takes the error away once a field is corrected', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'routes/new', 'Create a route');
  await page.getByLabel('Route id').fill('files');
  await page.getByLabel('Backend URL').fill('ftp://files.internal');
  await page.getByLabel('Path prefix').fill('v1/files');
  await page.getByRole('button', { name: 'Create route' }).click();
  const refused = await tollgate.admin('POST', '/tollgate/routes', {
    routeId: 'files',
    upstreamUrl: 'ftp://files.internal',
    match: { pathPrefix: 'v1/files' },
  });
  expect(refused.status).toBe(400);
  const alert = page.getByRole('alert');
  await alert.getByText('Some values need a change:').waitFor();
  expect((await alert.getByRole('listitem').allInnerTexts()).sort()).toEqual([
    'Backend URL: must be an http:// or https:// address, with no query or fragment, such as http://search.internal:8080.',
    'Path prefix: must start with a slash and name whole path segments, with no trailing slash: / or /v1/search.',
  ]);
  expect(await alert.innerText()).not.toContain('holds a character it may not');
  // The error spoke of values no longer there: it goes as soon as one is changed.
  await page.getByLabel('Path prefix').fill('/v1/files');
  await alert.waitFor({ state: 'detached' });
  await page.getByLabel('Backend URL').fill('http://files.internal');
  await page.getByRole('button', { name: 'Create route' }).click();
  await page.getByRole('status').filter({ hasText: 'The route files is created' }).waitFor();
  expect((await route('files')).body).toMatchObject({
    upstreamUrl: 'http://files.internal',
    match: { pathPrefix: '/v1/files' },
  });
});
