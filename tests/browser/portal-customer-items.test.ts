/**
 * What a customer meets in the portal (issue 51, contract section 32) in Chromium against a built
 * Tollgate: the API reference shows the team's Markdown with no HTML of it reaching the page (the
 * document's tags show as text, code as written), a signed-in page links the team's support, the key
 * list shows each key's id, deleting a key says its usage stays, and a key the team disabled says so
 * and offers no Enable.
 */
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { consoleSuite, unexpectedErrors, type ConsoleSession } from './helpers/console-browser.js';
import { PORTAL, REFERENCE_DOCUMENT, openPortalFor, signedInPortal } from './helpers/portal-browser.js';

let tollgate: Tollgate;
let consumerId = '';
let key = { id: '', name: 'Weather widget' };

/** A reference whose Markdown holds HTML where swagger-ui renders Markdown: info, operation, parameter. */
const HOSTILE_DOCUMENT = {
  ...REFERENCE_DOCUMENT,
  info: {
    ...REFERENCE_DOCUMENT.info,
    description:
      'Forecasts <b id="injected-bold">in bold</b>.\n\n<img id="injected-image" src="https://tracker.example/p.png">\n\nGeneric `Array<City>` stays code.',
  },
  paths: {
    '/forecast': {
      get: {
        summary: 'The forecast for a city',
        description:
          '<form id="injected-form" action="https://evil.example"><input name="key"></form>Returns it.',
        parameters: [
          {
            name: 'city',
            in: 'query',
            required: true,
            description: '<a id="injected-link" href="https://evil.example">A city</a>',
            schema: { type: 'string' },
          },
        ],
        responses: { '200': { description: '<iframe id="injected-frame"></iframe>The forecast' } },
      },
    },
  },
};

const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    consumerId = await openPortalFor(tollgate, 'Initech');
    const created = await tollgate.admin('POST', '/consumer-api-key/create', { name: key.name, consumerId });
    expect(created.status).toBe(201);
    key = { id: created.body.id as string, name: key.name };
    const settings = await tollgate.admin('PATCH', `${PORTAL}/settings`, {
      apiReference: { document: HOSTILE_DOCUMENT },
    });
    expect(settings.status).toBe(200);
  },
  undefined,
  {},
  'embedded',
);

let session: ConsoleSession;
beforeEach(async () => {
  session = await signedInPortal(suite.browser, tollgate, consumerId);
});
afterEach(async () => {
  expect(unexpectedErrors(session)).toEqual([]);
  await session.context.close();
});

it("shows the reference's Markdown with its HTML as text, and code as written", async () => {
  const { page } = session;
  await page.getByRole('link', { name: 'API reference' }).click();
  await page.getByText('The forecast for a city').click();
  await page.getByText('Returns it.').waitFor();
  const reference = page.locator('.reference');
  for (const id of ['injected-bold', 'injected-image', 'injected-form', 'injected-link', 'injected-frame'])
    expect({ id, elements: await reference.locator(`#${id}`).count() }).toEqual({ id, elements: 0 });
  expect(await reference.locator('.info').textContent()).toContain(
    'Forecasts <b id="injected-bold">in bold</b>.',
  );
  expect(await reference.locator('.info code').first().textContent()).toBe('Array<City>');
  expect(await reference.locator('.opblock-body').textContent()).toContain(
    '<a id="injected-link" href="https://evil.example">A city</a>',
  );
});

it("links the team's support from every signed-in page", async () => {
  const support = session.page.getByRole('link', { name: 'Contact support' });
  expect(await support.getAttribute('href')).toBe('https://acme.example/support');
  await session.page.getByRole('link', { name: 'Usage' }).first().click();
  expect(await support.getAttribute('href')).toBe('https://acme.example/support');
});

it('lists each key with its id, and deleting one says its usage stays', async () => {
  const { page } = session;
  const row = page.getByRole('row').filter({ hasText: key.name });
  expect(await row.getByRole('cell').nth(1).textContent()).toBe(key.id);
  await row.getByRole('link', { name: key.name }).click();
  await page.getByRole('button', { name: 'Delete…' }).click();
  const dialog = page.getByRole('dialog', { name: `Delete ${key.name}?` });
  expect(await dialog.textContent()).toContain('Its usage stays, counted for its consumer.');
  expect(await dialog.textContent()).not.toContain('deleted with it');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
});

it('says a key the team disabled is theirs to enable, and offers no Enable', async () => {
  const { page } = session;
  const created = await tollgate.admin('POST', '/consumer-api-key/create', {
    name: 'Legacy sync',
    consumerId,
  });
  expect(
    (await tollgate.admin('PATCH', `/consumer-api-key/${created.body.id}`, { enabled: false })).status,
  ).toBe(200);
  await page.reload();
  await page.getByRole('link', { name: 'Legacy sync' }).click();
  await page.getByText('Disabled by the team: its requests are refused. Ask them to enable it.').waitFor();
  expect(await page.getByRole('button', { name: 'Enable' }).isDisabled()).toBe(true);
});
