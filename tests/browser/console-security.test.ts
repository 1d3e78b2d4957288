/**
 * The console's promises about the browser, in Chromium against a built Tollgate: the token stays in
 * this tab's session storage (never in a URL, gone at sign-out, dropped on a 401); every request stays
 * on the origin; the Content-Security-Policy holds with no violation and no console error on any page;
 * axe-core finds no serious or critical accessibility violation on any page or dialog; and every
 * action is reachable from the keyboard, with a visible focus and dialogs that keep and give back focus.
 */
import { hit, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
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
let opened: ConsoleSession | undefined;
let key = { id: '', secret: '' };

/** Tollgate's clock: the wrong-token budget's minute is started, never waited for. */
const clock = new TestClock();

const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    expect(
      (
        await tollgate.admin('POST', '/rate-limit/create', {
          rateLimitId: 'gold',
          description: 'Gold',
          limit: 5,
          period: 'minute',
        })
      ).status,
    ).toBe(201);
    key = (
      await tollgate.admin('POST', '/consumer-api-key/create', {
        name: 'web-shop',
        rateLimitId: 'gold',
        externalId: 'cus_7',
        metadata: { tier: 'gold' },
      })
    ).body;
    for (const path of ['/v1/cart', '/v1/cart', '/v1/status/502'])
      await hit(tollgate, key.secret, path, { 'x-customer-id': 'acme' });
    // The overview reads the fleet's usage once: every test starts once the three requests are in it.
    for (let tries = 0; ; tries++) {
      const usage = await tollgate.admin('GET', '/tollgate/usage?granularity=hour');
      const requests = (usage.body.buckets as { requests: number }[]).reduce((n, b) => n + b.requests, 0);
      if (requests === 3) break;
      expect(tries).toBeLessThan(100);
      await new Promise((r) => setTimeout(r, 100));
    }
  },
  120_000,
  clock.env,
);

/** A fresh tab, not signed in; closed after the test. */
async function newTab(): Promise<ConsoleSession> {
  opened = await openConsole(suite.browser, tollgate);
  return opened;
}

afterEach(async () => {
  await opened?.context.close();
  opened = undefined;
});

const storage = (s: ConsoleSession) =>
  s.page.evaluate(() => ({
    session: { ...sessionStorage },
    local: { ...localStorage },
    cookies: document.cookie,
  }));

it('keeps the token in session storage only: never in a URL, gone after sign-out', async () => {
  const session = await newTab();
  const { page } = session;
  // A wrong token: the API's message, and nothing stored.
  await page.getByLabel('Root token or admin token').fill('not-the-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').getByText('The token is not valid').waitFor();
  expect((await storage(session)).session).toEqual({});

  await page.getByLabel('Root token or admin token').fill(tollgate.rootToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  expect(await storage(session)).toEqual({
    session: { 'tollgate.console.token': tollgate.rootToken },
    local: {},
    cookies: '',
  });
  // A reload in the same tab stays signed in.
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await visit(session, `keys/${key.id}`, 'web-shop');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { level: 1, name: 'Tollgate console' }).waitFor();
  await page.getByRole('status').getByText('You signed out.').waitFor();
  expect(await storage(session)).toEqual({ session: {}, local: {}, cookies: '' });
  // Signed out, a page's address shows the sign-in form, not the page.
  await page.goto(`${session.consoleUrl}#/keys`);
  await page.getByLabel('Root token or admin token').waitFor();
  expect(await page.getByRole('heading', { level: 1, name: 'Keys' }).count()).toBe(0);

  const urls = [...session.requests, ...session.navigations];
  expect(urls.length).toBeGreaterThan(5);
  expect(urls.filter((u) => u.includes(tollgate.rootToken) || u.includes('not-the-token'))).toEqual([]);
  expect(unexpectedErrors(session)).toEqual([]);
});

it('signs out when the API refuses the token (revoked while signed in), and says why', async () => {
  const created = await tollgate.admin('POST', '/tollgate/admin-tokens', {
    name: 'short-lived',
    scopes: ['keys:read'],
  });
  const session = await newTab();
  await signIn(session, created.body.secret);
  await visit(session, 'keys', 'Keys');
  // Every call of the page has been answered: the list is shown, and its sparklines need a scope this
  // token lacks (the page's CSV button says so before any answer, so its note is not enough).
  const row = session.page
    .getByRole('row')
    .filter({ has: session.page.getByRole('link', { name: 'web-shop' }) });
  await row.getByText('needs usage:read').waitFor();
  expect((await tollgate.admin('DELETE', `/tollgate/admin-tokens/${created.body.id}`)).status).toBe(200);
  await session.page.getByRole('link', { name: 'web-shop' }).click();
  await session.page.getByRole('status').getByText('Signed out: The token is not valid').waitFor();
  await session.page.getByLabel('Root token or admin token').waitFor();
  expect((await storage(session)).session).toEqual({});
  expect(unexpectedErrors(session)).toEqual([]);
});

/** Every page and dialog of the console, in turn; `check` runs on each. */
async function tour(s: ConsoleSession, check: (where: string) => Promise<void>): Promise<void> {
  const { page } = s;
  await check('sign-in');
  await signIn(s, tollgate.rootToken);
  await page.getByRole('button', { name: 'Requests: 3' }).waitFor();
  await check('overview');
  await page.getByRole('button', { name: 'Show the data as a table' }).click();
  await check('overview, data table');
  await visit(s, 'keys', 'Keys');
  await page.locator('td.sparkline-cell svg').first().waitFor();
  await check('key list');
  await visit(s, `keys/${key.id}`, 'web-shop');
  await page.getByRole('region', { name: 'Endpoints' }).getByRole('cell', { name: '/v1/cart' }).waitFor();
  await page.getByRole('region', { name: 'Limits' }).getByRole('meter').waitFor();
  await check('key detail');
  for (const [button, dialog] of [
    ['Roll secret…', 'Roll the secret'],
    ['Expiry…', 'Expiry'],
    ['Plan…', 'Plan'],
    ['Edit…', 'Edit the key'],
    ['Delete…', 'Delete web-shop?'],
  ] as const) {
    await page.getByRole('button', { name: button }).click();
    await page.getByRole('dialog', { name: dialog }).waitFor();
    await check(`dialog ${dialog}`);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
  }
  await page.getByRole('button', { name: 'Roll secret…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Roll secret' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Done' }).waitFor();
  await check('dialog roll, new secret shown');
  await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click();
  await visit(s, 'keys/new', 'Create a key');
  await check('create key');
  await page.getByLabel('Name', { exact: true }).fill('tour-key');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('heading', { level: 1, name: 'tour-key' }).waitFor();
  await page.getByLabel('Secret of the new key').waitFor();
  await check('key created');
  await visit(s, 'plans', 'Plans');
  await page.locator('tr[data-plan-id="gold"]').waitFor();
  await check('plans');
  await visit(s, 'plans/new', 'Create a plan');
  await page.getByRole('button', { name: 'Add a limit' }).click();
  await page.getByRole('group', { name: 'Limit 2' }).getByText('Counts only some requests').click();
  await page.getByRole('button', { name: 'Add a cost' }).click();
  await check('plan form');
  await visit(s, 'plans/gold/edit', 'Edit the plan gold');
  await page.getByLabel('Description').waitFor();
  await check('plan edit');
  await visit(s, 'audit', 'Audit log');
  await page.locator('tbody tr[data-audit-id]').first().getByText('Details').click();
  await check('audit log');
  await visit(s, 'access', 'Your access');
  await check('your access');
  await visit(s, 'nowhere', 'Page not found');
  await check('not found');
}

it('stays on its origin, under its CSP, without a console error, on every page and dialog', async () => {
  const session = await newTab();
  const response = await session.page.goto(session.consoleUrl);
  expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
  const visited: string[] = [];
  await tour(session, async (where) => {
    visited.push(where);
  });
  expect(visited).toHaveLength(19);
  const origin = new URL(tollgate.url).origin;
  expect(session.requests.length).toBeGreaterThan(20);
  expect(session.requests.filter((u) => new URL(u).origin !== origin)).toEqual([]);
  expect(session.cspViolations).toEqual([]);
  expect(session.errors).toEqual([]);
  // The recorder itself works: an inline style element added to the page is refused, and reported.
  await session.page.evaluate(() => {
    const style = document.createElement('style');
    style.textContent = 'body { color: red }';
    document.head.append(style);
  });
  const { value } = await waitFor(
    async () => session.cspViolations.length,
    (n) => n > 0,
    { timeoutMs: 5_000 },
  );
  expect(value).toBe(1);
  expect(session.cspViolations[0]).toMatch(/^style-src/);
});

it('has no serious or critical accessibility violation (axe-core) on any page or dialog', async () => {
  const session = await newTab();
  const found: Record<string, string[]> = {};
  await tour(session, async (where) => {
    const violations = await seriousAccessibilityViolations(session.page);
    if (violations.length > 0) found[where] = violations;
  });
  expect(found).toEqual({});
  // The check itself finds what it should: a control without a label is a critical violation.
  await session.page.evaluate(() => document.querySelector('main')!.append(document.createElement('input')));
  expect(await seriousAccessibilityViolations(session.page)).toEqual([
    expect.stringMatching(/^label \(critical\)/),
  ]);
  // axe's own evaluation ran in the page: it must not have tripped the page's CSP either.
  expect(unexpectedErrors(session)).toEqual([]);
});

it('is usable from the keyboard: skip link, navigation, visible focus, dialogs that trap and give back focus', async () => {
  const session = await newTab();
  await signIn(session, tollgate.rootToken);
  const { page } = session;
  const focused = () =>
    page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      const style = el ? getComputedStyle(el) : undefined;
      return {
        text: el?.textContent?.trim() ?? '',
        tag: el?.tagName ?? '',
        inDialog: !!el?.closest('dialog'),
        outline: style ? `${style.outlineStyle} ${style.outlineWidth}` : '',
      };
    });

  // Signing in took the focus to the overview's heading (in an effect, a frame after it is drawn).
  await page.waitForFunction(() => document.activeElement?.tagName === 'H1');
  expect(await focused()).toMatchObject({ tag: 'H1', text: 'Overview' });
  // A page just loaded: the first Tab reaches the skip link, which takes the focus to the page's heading.
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await page.keyboard.press('Tab');
  expect((await focused()).text).toBe('Skip to content');
  expect((await focused()).outline).toMatch(/^solid [1-9]/);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.activeElement?.tagName === 'H1');
  expect(await focused()).toMatchObject({ tag: 'H1', text: 'Overview' });

  // The main navigation, by Tab and Enter alone: the new page's heading takes the focus.
  await page.getByRole('link', { name: 'Overview' }).focus();
  await page.keyboard.press('Tab');
  expect((await focused()).text).toBe('Keys');
  expect((await focused()).outline).toMatch(/^solid [1-9]/);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
  await page.waitForFunction(() => document.activeElement?.tagName === 'H1');
  // Tab from the heading reaches the filters, then the table's links.
  await page.keyboard.press('Tab');
  expect((await focused()).text).toBe('Create key');

  // A dialog from the keyboard: focus moves in, Tab and Shift+Tab cycle inside, Escape closes and gives focus back.
  await visit(session, `keys/${key.id}`, 'web-shop');
  const opener = page.getByRole('button', { name: 'Delete…' });
  await opener.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('dialog', { name: 'Delete web-shop?' }).waitFor();
  await page.waitForFunction(() => !!document.activeElement?.closest('dialog'));
  for (let i = 0; i < 5; i++) {
    await page.keyboard.press('Tab');
    const now = await focused();
    expect(now.inDialog).toBe(true);
    expect(now.outline).toMatch(/^solid [1-9]/);
  }
  for (let i = 0; i < 5; i++) {
    await page.keyboard.press('Shift+Tab');
    expect((await focused()).inDialog).toBe(true);
  }
  await page.keyboard.press('Escape');
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  expect((await focused()).text).toBe('Delete…');
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).status).toBe(200);

  // An action end to end by keyboard: disable the key with Enter on the focused button.
  await page.getByRole('button', { name: 'Disable', exact: true }).focus();
  await page.keyboard.press('Enter');
  await page.locator('p.status-message').filter({ hasText: 'The key is disabled' }).waitFor();
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.enabled).toBe(false);
  await page.getByRole('button', { name: 'Enable', exact: true }).focus();
  await page.keyboard.press('Space');
  await page.locator('p.status-message').filter({ hasText: 'The key is enabled' }).waitFor();
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.enabled).toBe(true);
  expect(unexpectedErrors(session)).toEqual([]);
});

it('sends nothing for an address whose id is a dot segment, and stays signed in', async () => {
  const session = await newTab();
  await signIn(session, tollgate.rootToken);
  const { page } = session;
  const origin = new URL(tollgate.url).origin;
  // The overview's own call for usage has been answered (its Top keys are drawn): it is not counted.
  await page.getByRole('heading', { level: 2, name: 'Top keys' }).waitFor();
  const before = session.requests.length;
  // `/consumer-api-key/..` would be `/` once resolved: the proxy, with the admin's token as an API key.
  for (const [fragment, id] of [
    ['keys/..', '..'],
    ['keys/%2e%2E', '..'],
    ['keys/.', '.'],
    ['plans/../edit', '..'],
  ] as const) {
    await page.goto(`${session.consoleUrl}#/${fragment}`);
    await page
      .getByRole('alert')
      .filter({ hasText: `Nothing has the id “${id}”` })
      .waitFor();
  }
  const sent = session.requests.slice(before).map((u) => new URL(u));
  expect(sent.filter((u) => u.origin === origin && !u.pathname.startsWith('/tollgate/console/'))).toEqual([]);
  expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(1);
  expect((await storage(session)).session).toEqual({ 'tollgate.console.token': tollgate.rootToken });
  expect(unexpectedErrors(session)).toEqual([]);
});

it('stays signed in on a 401 that is not about its token (a proxy in front refusing a call)', async () => {
  const session = await newTab();
  await signIn(session, tollgate.rootToken);
  const { page } = session;
  // As a gateway in front of Tollgate, or the proxy itself, would answer: a 401 of another kind.
  await page.route('**/consumer-api-key?*', (route) =>
    route.fulfill({
      status: 401,
      contentType: 'application/json',
      body: JSON.stringify({ error: 'The API key is not valid', code: 'invalid_api_key' }),
    }),
  );
  await visit(session, 'keys', 'Keys');
  await page.getByRole('alert').filter({ hasText: 'The API key is not valid' }).waitFor();
  await page.unroute('**/consumer-api-key?*');
  await visit(session, `keys/${key.id}`, 'web-shop');
  expect((await storage(session)).session).toEqual({ 'tollgate.console.token': tollgate.rootToken });
});

// Last: it throttles this client address for a minute, every token included.
it('says when to try again once sign-in is throttled after too many wrong tokens', async () => {
  // At the top of a minute: the budget is per minute, and the sign-in below must fall in the same one.
  clock.after(MINUTE_MS, 0);
  let retryAfter: string | null = null;
  for (let i = 0; i < 40 && retryAfter === null; i++) {
    const res = await fetch(`${tollgate.url}/consumer-api-key?limit=1`, {
      headers: { authorization: `Bearer wrong-token-${i}` },
    });
    await res.arrayBuffer();
    if (res.status === 429) retryAfter = res.headers.get('retry-after');
  }
  expect(Number(retryAfter)).toBeGreaterThan(0);
  const session = await newTab();
  const { page } = session;
  await page.getByLabel('Root token or admin token').fill(tollgate.rootToken);
  const asked = Date.now();
  await page.getByRole('button', { name: 'Sign in' }).click();
  const alert = page.getByRole('alert');
  await alert.getByText('Too many wrong tokens or key secrets were tried from this address.').waitFor();
  const [, seconds, from] = /Try again in (\d+) seconds?, from (\S+ \S+) UTC\./.exec(
    await alert.innerText(),
  )!;
  expect(Number(seconds)).toBeGreaterThan(0);
  expect(Number(seconds)).toBeLessThanOrEqual(Number(retryAfter));
  const fromMs = Date.parse(from!.replace(' ', 'T') + 'Z');
  expect(fromMs).toBeGreaterThanOrEqual(Math.floor(asked / 1000) * 1000);
  expect(fromMs).toBeLessThanOrEqual(Date.now() + Number(retryAfter) * 1000 + 1000);
  expect((await storage(session)).session).toEqual({});
});
