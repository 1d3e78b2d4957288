/**
 * Admin tokens in the console, in Chromium against a built Tollgate: create one with chosen scopes (its
 * secret shown once, with a copy button, and working at once), see it listed without its secret, and
 * revoke it through a dialog that starts on Cancel. Checked through the management API; axe clean.
 */
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  clipboardText,
  consoleSuite,
  openConsole,
  signIn,
  unexpectedErrors,
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

const listed = async () =>
  (await tollgate.admin('GET', '/tollgate/admin-tokens')).body.adminTokens as {
    id: string;
    name: string;
    scopes: string[];
    expiresAt: string | null;
  }[];

it('creates a token with its scopes, shows its secret once with a copy button, and revokes it', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'admin-tokens', 'Admin tokens');
  await page.getByText('No admin token yet').waitFor();
  await page.getByLabel('Name').fill('reporting');
  const scopes = page.getByRole('group', { name: 'Scopes' });
  await scopes.getByLabel('usage:read').check();
  await scopes.getByLabel('audit:read').check();
  await page.getByRole('button', { name: 'Create token' }).click();
  await page.getByRole('status').filter({ hasText: 'The token reporting is created.' }).waitFor();
  const secretField = page.getByLabel('Secret of the token reporting');
  const secret = await secretField.inputValue();
  expect(secret).toMatch(/^tga_/);
  await page.getByRole('button', { name: 'Copy' }).click();
  expect(await clipboardText(page)).toBe(secret);
  // The secret works at once, and holds only the scopes chosen.
  const tokens = await listed();
  expect(tokens).toEqual([
    expect.objectContaining({ name: 'reporting', scopes: ['usage:read', 'audit:read'] }),
  ]);
  const usage = await fetch(`${tollgate.url}/tollgate/usage`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  expect(usage.status).toBe(200);
  const keys = await fetch(`${tollgate.url}/consumer-api-key`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  expect(keys.status).toBe(403);

  const row = rowWith(page, 'reporting');
  expect(await row.innerText()).toContain('usage:read, audit:read');
  expect(await page.locator('table').innerText()).not.toContain(secret);
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  // Revoking starts on Cancel: Enter keeps the token.
  await row.getByRole('button', { name: 'Revoke reporting' }).click();
  const dialog = page.getByRole('dialog', { name: 'Revoke the token reporting?' });
  await dialog.waitFor();
  await page.waitForFunction(() => document.activeElement?.closest('dialog') !== null);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  expect(await listed()).toHaveLength(1);

  await row.getByRole('button', { name: 'Revoke reporting' }).click();
  await dialog.getByRole('button', { name: 'Revoke token' }).click();
  await page.getByRole('status').filter({ hasText: 'The token reporting is revoked' }).waitFor();
  await row.waitFor({ state: 'detached' });
  // The secret is no longer shown once the token is gone.
  expect(await secretField.count()).toBe(0);
  expect(await listed()).toEqual([]);
  const refused = await fetch(`${tollgate.url}/tollgate/usage`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  expect(refused.status).toBe(401);
});

it('says in plain words what is wrong when no scope is chosen', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'admin-tokens', 'Admin tokens');
  await page.getByLabel('Name').fill('empty');
  await page.getByRole('button', { name: 'Create token' }).click();
  await page.getByRole('alert').filter({ hasText: 'Scopes' }).waitFor();
  expect(await listed()).toEqual([]);
});

it('says in the navigation which sections a narrow token may not read, and the scope each needs', async () => {
  const narrow = (
    await tollgate.admin('POST', '/tollgate/admin-tokens', {
      name: 'keys-only',
      scopes: ['keys:read', 'usage:read'],
    })
  ).body;
  const session = await openConsole(suite.browser, tollgate);
  try {
    await signIn(session, narrow.secret);
    const nav = session.page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Webhooks (needs webhooks:read)' }).waitFor();
    await nav.getByRole('link', { name: 'Plans (needs plans:read)' }).waitFor();
    await nav.getByRole('link', { name: 'Billing exports (needs billing:read)' }).waitFor();
    // What it may read is offered plainly.
    expect(await nav.getByRole('link', { name: 'Keys', exact: true }).count()).toBe(1);
    expect(await nav.getByRole('link', { name: 'Consumers', exact: true }).count()).toBe(1);
    expect(await seriousAccessibilityViolations(session.page)).toEqual([]);
    expect(unexpectedErrors(session)).toEqual([]);
  } finally {
    await session.context.close();
  }
});

it('starts with no scope ticked, so ticking keys:read makes a read-only token that opens Keys, expiring when typed', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'admin-tokens', 'Admin tokens');
  const scopes = page.getByRole('group', { name: 'Scopes' });
  expect(await scopes.getByRole('checkbox').count()).toBeGreaterThan(1);
  expect(await scopes.getByRole('checkbox', { checked: true }).count()).toBe(0);
  await page.getByLabel('Name').fill('read-only');
  await scopes.getByLabel('keys:read').click();
  const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 19) + 'Z';
  await page.getByLabel('Expires (UTC, optional)').fill(expiresAt.slice(0, 19));
  await page.getByRole('button', { name: 'Create token' }).click();
  await page.getByRole('status').filter({ hasText: 'The token read-only is created.' }).waitFor();
  const secret = await page.getByLabel('Secret of the token read-only').inputValue();
  const made = (await listed()).find((t) => t.name === 'read-only');
  expect(made).toMatchObject({ scopes: ['keys:read'], expiresAt });
  await rowWith(page, 'read-only').getByText(expiresAt.replace('T', ' ').replace('Z', ' UTC')).waitFor();
  // The token opens Keys in a console of its own.
  const s = await openConsole(suite.browser, tollgate);
  try {
    await signIn(s, secret);
    await visit(s, 'keys', 'Keys');
    await s.page.getByText('No key matches.').waitFor();
    expect(unexpectedErrors(s)).toEqual([]);
  } finally {
    await s.context.close();
  }
});
