/**
 * What a token may do, in the console (docs/guides/console.md, Your access), in Chromium against a built
 * Tollgate: the signed-in token's own page names its scopes as `GET /tollgate/whoami` does; every
 * control that needs a scope the token lacks is shown disabled with that scope before anyone clicks it,
 * writes included, on every page; and without keys:secrets no secret reaches the key's page at all.
 */
import type { Page } from 'playwright-core';
import { hit, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  consoleSuite,
  openConsole,
  seriousAccessibilityViolations,
  signIn,
  unexpectedErrors,
  visit,
  type ConsoleSession,
} from './helpers/console-browser.js';

let tollgate: Tollgate;
let key: { id: string; secret: string };
let consumerId = '';

const suite = consoleSuite(async (started) => {
  tollgate = started;
  const admin = tollgate.admin.bind(tollgate);
  expect(
    (await admin('POST', '/rate-limit/create', { rateLimitId: 'gold', limit: 100, period: 'minute' })).status,
  ).toBe(201);
  consumerId = (await admin('POST', '/tollgate/consumers', { name: 'Acme' })).body.consumerId;
  key = (await admin('POST', '/consumer-api-key/create', { name: 'shop', rateLimitId: 'gold', consumerId }))
    .body;
  expect(
    (
      await admin('POST', '/tollgate/routes', {
        routeId: 'search',
        match: { pathPrefix: '/search' },
        upstreamUrl: 'http://127.0.0.1:9',
      })
    ).status,
  ).toBe(201);
  expect(
    (await admin('POST', '/tollgate/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['key.created'] }))
      .status,
  ).toBe(201);
  expect(
    (
      await admin('POST', '/tollgate/billing-exports', {
        type: 'cloudevents',
        url: 'http://127.0.0.1:9/events',
        eventName: 'api.requests',
        interval: 'hour',
        subject: 'key',
      })
    ).status,
  ).toBe(201);
  for (let i = 0; i < 3; i++) expect(await hit(tollgate, key.secret)).toBe(200);
  await waitFor(
    async () => (await admin('GET', `/consumer-api-key/${key.id}`)).body.usage.totalRequests,
    (n) => n === 3,
  );
});

const sessions: ConsoleSession[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) {
    expect(unexpectedErrors(session)).toEqual([]);
    await session.context.close();
  }
});

/** A tab signed in with a new admin token holding `scopes`; every API answer's text is kept. */
async function signedInWith(
  scopes: readonly string[],
): Promise<{ session: ConsoleSession; answers: string[]; secret: string }> {
  const made = await tollgate.admin('POST', '/tollgate/admin-tokens', {
    name: `only ${scopes.join(' ')}`,
    scopes,
  });
  expect(made.status).toBe(201);
  const session = await openConsole(suite.browser, tollgate);
  sessions.push(session);
  const answers: string[] = [];
  session.page.on('response', (res) => {
    if (!res.url().includes('/tollgate/console/'))
      void res.text().then(
        (t) => answers.push(t),
        () => undefined,
      );
  });
  await signIn(session, made.body.secret);
  return { session, answers, secret: made.body.secret };
}

/** The disabled button with exactly this name (the action and the scope it lacks). */
async function unavailable(page: Page, name: string): Promise<void> {
  const button = page.getByRole('button', { name, exact: true });
  await button.waitFor();
  expect(await button.isDisabled()).toBe(true);
}

it('names the signed-in token’s scopes as whoami answers them, and the sections it cannot read', async () => {
  const { session, secret } = await signedInWith(['keys:read', 'usage:read']);
  const { page } = session;
  const self = await fetch(`${tollgate.url}/tollgate/whoami`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  const whoami = (await self.json()) as { name: string; scopes: string[] };
  expect(whoami.scopes).toEqual(['keys:read', 'usage:read']);
  await page.getByRole('link', { name: 'Your access' }).click();
  await page.getByRole('heading', { level: 1, name: 'Your access' }).waitFor();
  await page.getByText(`The admin token ${whoami.name}`).waitFor();
  const held = await page
    .locator('tbody tr[data-scope]')
    .evaluateAll((rows) => rows.map((r) => [r.getAttribute('data-scope'), r.lastElementChild!.textContent]));
  expect(held.filter(([, said]) => said === 'Holds it').map(([scope]) => scope)).toEqual(whoami.scopes);
  expect(held.length).toBeGreaterThan(whoami.scopes.length);
  // The navigation says which sections it cannot read, before a click.
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const [section, scope] of [
    ['Plans', 'plans:read'],
    ['Routes', 'routes:read'],
    ['Audit log', 'audit:read'],
    ['Admin tokens', 'tokens:write'],
  ])
    await nav.getByRole('link', { name: `${section} (needs ${scope})` }).waitFor();
  expect(await nav.getByRole('link', { name: 'Keys', exact: true }).count()).toBe(1);
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  // The root token holds every scope.
  const root = await openConsole(suite.browser, tollgate);
  sessions.push(root);
  await signIn(root, tollgate.rootToken);
  await visit(root, 'access', 'Your access');
  await root.page.getByText('The root token (ROOT_TOKEN): every scope').waitFor();
  expect(await root.page.getByRole('cell', { name: 'Lacks it' }).count()).toBe(0);
});

it('shows a key’s page without keys:secrets with no secret in it, and every change it cannot make as such', async () => {
  const { session, answers } = await signedInWith(['keys:read', 'usage:read']);
  const { page } = session;
  await visit(session, 'keys', 'Keys');
  await unavailable(page, 'Create key (needs keys:write)');
  await visit(session, `keys/${key.id}`, 'shop');
  await page.getByText('Reading the secret needs the scope keys:secrets, which this token lacks.').waitFor();
  for (const action of ['Disable', 'Roll secret…', 'Expiry…', 'Plan…', 'Edit…', 'Delete…', 'Change consumer'])
    await unavailable(page, `${action} (needs keys:write)`);
  // The usage it may read is there.
  await page.getByRole('list', { name: 'Series' }).getByRole('button', { name: 'Requests: 3' }).waitFor();
  expect(await page.getByLabel('Secret', { exact: true }).count()).toBe(0);
  expect(await page.content()).not.toContain(key.secret);
  // The API never sent it: no answer the page received holds it.
  expect(answers.length).toBeGreaterThan(3);
  expect(answers.filter((text) => text.includes(key.secret))).toEqual([]);
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  // With keys:secrets the same page holds it (masked until revealed).
  const { session: secrets } = await signedInWith(['keys:read', 'keys:secrets']);
  await visit(secrets, `keys/${key.id}`, 'shop');
  await secrets.page.getByRole('button', { name: 'Reveal' }).click();
  expect(await secrets.page.getByLabel('Secret', { exact: true }).inputValue()).toBe(key.secret);
});

it('shows every write of plans, consumers, routes, webhooks and billing exports as unavailable to a reader', async () => {
  const { session } = await signedInWith([
    'keys:read',
    'plans:read',
    'routes:read',
    'webhooks:read',
    'billing:read',
  ]);
  const { page } = session;
  await visit(session, 'plans', 'Plans');
  await unavailable(page, 'Create plan (needs plans:write)');
  await unavailable(page, 'Edit gold (needs plans:write)');
  await unavailable(page, 'Delete gold (needs plans:write)');
  await visit(session, 'consumers', 'Consumers');
  await unavailable(page, 'Create consumer (needs keys:write)');
  await visit(session, `consumers/${consumerId}`, 'Acme');
  await unavailable(page, 'Edit (needs keys:write)');
  await unavailable(page, 'Delete (needs keys:write)');
  await page.getByText('Usage over time needs the scope usage:read, which this token lacks.').waitFor();
  await visit(session, 'routes', 'Routes');
  await unavailable(page, 'Create route (needs routes:write)');
  await unavailable(page, 'Edit search (needs routes:write)');
  await unavailable(page, 'Delete search (needs routes:write)');
  await visit(session, 'webhooks', 'Webhooks');
  await unavailable(page, 'Create webhook (needs webhooks:write)');
  await unavailable(page, 'Disable http://127.0.0.1:9/hook (needs webhooks:write)');
  await unavailable(page, 'Delete http://127.0.0.1:9/hook (needs webhooks:write)');
  await visit(session, 'billing-exports', 'Billing exports');
  await unavailable(page, 'Create export (needs billing:write)');
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  // Keys without usage:read: the list says so instead of drawing sparklines.
  await visit(session, 'keys', 'Keys');
  await page.locator(`tbody tr[data-key-id="${key.id}"]`).getByText('needs usage:read').waitFor();
  await visit(session, `keys/${key.id}`, 'shop');
  await unavailable(page, 'Download CSV (needs usage:read)');
});
