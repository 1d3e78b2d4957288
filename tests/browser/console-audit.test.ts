/**
 * The audit log in the console, in Chromium against a built Tollgate: newest first, a page at a time,
 * filtered by action, target, actor and time exactly as the API filters, each entry's before and after;
 * and what a token without the scope a page needs sees (the API's 403 message, explained).
 */
import { AUDIT_ACTIONS } from '../../src/store/audit-actions.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { SECOND_MS, TestClock } from '../helpers/test-clock.js';
import { consoleSuite, signedInTab, visit, type ConsoleSession } from './helpers/console-browser.js';

let tollgate: Tollgate;
let keyId = '';
const token = { id: '', secret: '' };

interface Entry {
  id: string;
  time: string;
  action: string;
}

const clock = new TestClock();
const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    const created = await tollgate.admin('POST', '/tollgate/admin-tokens', {
      name: 'ci-deploy',
      scopes: ['keys:read', 'keys:write'],
    });
    expect(created.status).toBe(201);
    Object.assign(token, { id: created.body.id, secret: created.body.secret });
    // 60 keys created by the root token, one key changed twice by the admin token: 64 entries, two pages.
    for (let i = 0; i < 60; i += 12) {
      await Promise.all(
        Array.from({ length: 12 }, (_, j) =>
          tollgate.admin('POST', '/consumer-api-key/create', { name: `audited-${i + j}` }),
        ),
      );
    }
    const asToken = (method: string, path: string, body: unknown) =>
      fetch(tollgate.url + path, {
        method,
        headers: { authorization: `Bearer ${token.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    // The token's changes start in a later second than the root token's, for the time filter to split them:
    // Tollgate's clock moves to it rather than the test waiting for it.
    clock.after(SECOND_MS, 50);
    const key = await (await asToken('POST', '/consumer-api-key/create', { name: 'ci-made' })).json();
    keyId = key.id;
    expect((await asToken('PATCH', `/consumer-api-key/${keyId}`, { enabled: false })).status).toBe(200);
    expect((await asToken('PATCH', `/consumer-api-key/${keyId}`, { name: 'ci-made-renamed' })).status).toBe(
      200,
    );
  },
  undefined,
  clock.env,
);

const apiEntries = async (query: string): Promise<{ auditLog: Entry[]; nextCursor?: string }> =>
  (await tollgate.admin('GET', `/tollgate/audit-log?${query}`)).body;

const shownIds = (s: ConsoleSession) =>
  s.page
    .locator('tbody tr[data-audit-id]')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-audit-id')));

/** Waits until the table lists exactly `ids`, in order; if it never does, says what it listed instead. */
const listing = (s: ConsoleSession, ids: string[]) =>
  s.page
    .waitForFunction(
      (want) =>
        [...document.querySelectorAll('tbody tr[data-audit-id]')]
          .map((r) => r.getAttribute('data-audit-id'))
          .join() === want.join(),
      ids,
    )
    .catch(async (err: unknown) => {
      const shown = await shownIds(s);
      throw new Error(
        `the table at ${s.page.url()} lists ${JSON.stringify(shown)}, not ${JSON.stringify(ids)}: ${String(err)}`,
      );
    });

describe('signed in with the root token', () => {
  const tab = signedInTab(suite, () => tollgate.rootToken);

  it('lists the entries newest first, 50 a page, as the API does', async () => {
    const first = await apiEntries('limit=50');
    expect(first.nextCursor).toBeDefined();
    const second = await apiEntries(`limit=50&cursor=${encodeURIComponent(first.nextCursor!)}`);
    await tab.session.page.getByRole('link', { name: 'Audit log' }).click();
    await tab.session.page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await listing(
      tab.session,
      first.auditLog.map((e) => e.id),
    );
    await tab.session.page.getByRole('button', { name: 'Next page' }).click();
    await listing(
      tab.session,
      second.auditLog.map((e) => e.id),
    );
    expect(await shownIds(tab.session)).toHaveLength(second.auditLog.length);

    // The newest entry (page 1, row 1): who, what, which target, from where, and before and after.
    await tab.session.page.getByRole('button', { name: 'Previous page' }).click();
    await listing(
      tab.session,
      first.auditLog.map((e) => e.id),
    );
    const newest = tab.session.page.locator(`tr[data-audit-id="${first.auditLog[0]!.id}"]`);
    const cells = await newest.getByRole('cell').allInnerTexts();
    expect(cells.slice(0, 4)).toEqual([
      first.auditLog[0]!.time.replace('T', ' ').replace('Z', ' UTC'),
      `ci-deploy ${token.id}`,
      'key.update',
      `key ci-made-renamed\n${keyId}`,
    ]);
    // What changed, in a line; the whole before and after on demand.
    expect(cells[4]).toMatch(/^name: "ci-made" → "ci-made-renamed"\nDetails$/);
    await newest.getByText('Details').click();
    const [before, after] = await newest.locator('pre').allInnerTexts();
    expect(JSON.parse(before!)).toMatchObject({ name: 'ci-made', enabled: false });
    expect(JSON.parse(after!)).toMatchObject({ name: 'ci-made-renamed', enabled: false });
    await newest.getByRole('link', { name: 'ci-made-renamed' }).click();
    await tab.session.page.getByRole('heading', { level: 1, name: 'ci-made-renamed' }).waitFor();
  });

  it('filters by action, target, actor and time exactly as the API does', async () => {
    const { page } = tab.session;
    await visit(tab.session, 'audit', 'Audit log');
    const apply = async (query: string) => {
      await page.getByRole('button', { name: 'Filter' }).click();
      const expected = (await apiEntries(`limit=50&${query}`)).auditLog.map((e) => e.id);
      await listing(tab.session, expected);
      return expected;
    };
    await page.getByLabel('Action').selectOption('key.update');
    expect(await apply('action=key.update')).toHaveLength(2);
    expect(page.url()).toContain('#/audit?action=key.update');

    await page.getByRole('button', { name: 'Clear' }).click();
    // Clearing changes the address, and the form follows it: type only once the unfiltered list is back.
    await listing(
      tab.session,
      (await apiEntries('limit=50')).auditLog.map((e) => e.id),
    );
    expect(await page.getByLabel('Action').inputValue()).toBe('');
    await page.getByLabel('Target id').fill(keyId);
    expect(await apply(`targetId=${keyId}`)).toHaveLength(3);

    await page.getByLabel('Target id').fill('');
    await page.getByLabel('Actor (admin token id)').fill(token.id);
    // The token's own creation was the root token's doing: its three changes to the key only.
    expect(await apply(`actorId=${token.id}`)).toHaveLength(3);

    // A time range: from the second the token's changes began (inclusive), to an hour later, then to
    // that second (exclusive): the two split the log between the token's entries and the rest.
    const everything = (await apiEntries('limit=100')).auditLog;
    const split = everything.find(
      (e) => e.action === 'key.create' && e.time !== everything.at(-1)!.time,
    )!.time;
    const hourLater = new Date(Date.parse(split) + 3_600_000).toISOString().replace('.000Z', 'Z');
    await page.getByLabel('Actor (admin token id)').fill('');
    await page.getByLabel('From (UTC)').fill(split.slice(0, 19));
    await page.getByLabel('To (UTC)').fill(hourLater.slice(0, 19));
    const after = await apply(`from=${split}&to=${hourLater}`);
    expect(page.url()).toContain(`from=${encodeURIComponent(split)}`);
    await page.getByLabel('From (UTC)').fill('');
    await page.getByLabel('To (UTC)').fill(split.slice(0, 19));
    const before = await apply(`to=${split}`);
    expect(after).toEqual(everything.filter((e) => e.time >= split).map((e) => e.id));
    expect(before).toEqual(
      everything
        .filter((e) => e.time < split)
        .map((e) => e.id)
        .slice(0, 50),
    );
    expect(after.length).toBeGreaterThanOrEqual(3);

    await page.getByLabel('From (UTC)').fill('');
    await page.getByLabel('To (UTC)').fill('');
    await page.getByLabel('Target id').fill('key_none');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No entry matches.').waitFor();
  });

  it('offers every action the API records, and a consumer top-up links to the consumer', async () => {
    const { page } = tab.session;
    const consumer = await tollgate.admin('POST', '/tollgate/consumers', { name: 'audited-team' });
    expect(consumer.status).toBe(201);
    const consumerId = consumer.body.consumerId as string;
    const topUp = await tollgate.admin('POST', '/tollgate/credits', { consumerId, add: 250 });
    expect(topUp.status).toBe(200);
    await visit(tab.session, 'audit', 'Audit log');
    const offered = await page
      .getByLabel('Action')
      .locator('option')
      .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
    expect(offered.slice(1).sort()).toEqual([...AUDIT_ACTIONS].sort());

    await page.getByLabel('Action').selectOption('consumer.credits_add');
    await page.getByRole('button', { name: 'Filter' }).click();
    const expected = (await apiEntries('limit=50&action=consumer.credits_add')).auditLog;
    expect(expected).toHaveLength(1);
    await listing(
      tab.session,
      expected.map((e) => e.id),
    );
    const row = page.locator(`tr[data-audit-id="${expected[0]!.id}"]`);
    expect((await row.getByRole('cell').allInnerTexts())[4]).toContain('→');
    await row.getByRole('link', { name: 'audited-team' }).click();
    await page.getByRole('heading', { level: 1, name: 'audited-team' }).waitFor();
    expect(page.url()).toContain(`#/consumers/${consumerId}`);
  });
});

describe('signed in with an admin token that lacks scopes', () => {
  const tab = signedInTab(suite, () => token.secret);

  it('explains on each page, once, which scope the token lacks, and still shows what it may read', async () => {
    const { page } = tab.session;
    // The overview needs usage:read: known from the token's own scopes, said without asking the API.
    await page.getByText('The fleet’s traffic needs the scope usage:read, which this token lacks.').waitFor();
    expect(tab.session.requests.filter((u) => new URL(u).pathname === '/tollgate/usage')).toEqual([]);

    await visit(tab.session, 'audit', 'Audit log');
    const audit = page.getByRole('alert');
    await audit.getByText('The token you signed in with does not hold the scope audit:read').waitFor();
    // Said once: not the API's sentence for the same thing beside it.
    expect(await audit.innerText()).not.toContain('This call needs the scope');
    const refused = await fetch(`${tollgate.url}/tollgate/audit-log`, {
      headers: { authorization: `Bearer ${token.secret}` },
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toBe('This call needs the scope audit:read');

    // keys:read lists keys; their sparklines need usage:read, and say so.
    await visit(tab.session, 'keys', 'Keys');
    await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-key-id]').length === 50);
    await page.getByText('needs usage:read').first().waitFor();

    await visit(tab.session, 'plans', 'Plans');
    await page.getByRole('alert').getByText('does not hold the scope plans:read').waitFor();
  });
});
