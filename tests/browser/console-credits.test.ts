/**
 * Credits in the console, in Chromium against a built Tollgate with a real backend: a consumer's and a
 * key's prepaid balance and refill on their pages; the top-up dialog (add, set, amounts refused in
 * plain words before anything is sent, keyboard); a balance given, its refill edited and removed; a
 * credit spent through the proxy; and a token without keys:write, which sees every credit action
 * unavailable, naming the scope. Every change is checked through the management API; axe finds nothing
 * serious with the panel or its dialogs open.
 */
import { hit } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  consoleSuite,
  openConsole,
  seriousAccessibilityViolations,
  signedInTab,
  signIn,
  unexpectedErrors,
  visit,
  type ConsoleSession,
} from './helpers/console-browser.js';

let tollgate: Tollgate;
let consumerId = '';
let consumerKey = { id: '', secret: '' };

const MONTHLY = { remaining: 1000, refill: { amount: 1000, interval: 'month', dayOfMonth: 15 } };

const suite = consoleSuite(async (started) => {
  tollgate = started;
  const consumer = await tollgate.admin('POST', '/tollgate/consumers', { name: 'Acme', credits: MONTHLY });
  expect(consumer.status).toBe(201);
  consumerId = consumer.body.consumerId;
  const key = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'acme-prod', consumerId });
  expect(key.status).toBe(201);
  consumerKey = { id: key.body.id, secret: key.body.secret };
});
const tab = signedInTab(suite, () => tollgate.rootToken);

const consumerCredits = async (id = consumerId) =>
  (await tollgate.admin('GET', `/tollgate/consumers/${id}`)).body.credits;
const keyCredits = async (id: string) =>
  (await tollgate.admin('GET', `/consumer-api-key/${id}`)).body.credits;

/** The Credits panel and the balance it shows, once it shows `text`. */
const credits = (s: ConsoleSession) => s.page.getByRole('region', { name: 'Credits' });
const showsBalance = (s: ConsoleSession, text: string) =>
  credits(s)
    .locator('[data-credits-remaining]')
    .filter({ hasText: new RegExp(`^${text}$`) })
    .waitFor();
/** How many changes of a balance the page has sent. */
const creditCalls = (s: ConsoleSession) =>
  s.requests.filter((url) => url.endsWith('/tollgate/credits')).length;
/** The id of what holds the focus in the open dialog (the dialog moves it there as it opens). */
const focusedId = async (s: ConsoleSession) => {
  await s.page.waitForFunction(() => document.activeElement?.closest('dialog') != null);
  return s.page.evaluate(() => document.activeElement?.id ?? '');
};

it('shows a consumer’s balance and monthly refill, tops it up and sets it, and refuses bad amounts in plain words', async () => {
  const s = tab.session;
  const { page } = s;
  await visit(s, `consumers/${consumerId}`, 'Acme');
  await showsBalance(s, '1,000');
  await credits(s).getByText('Refills to 1,000 on day 15 of each month, 00:00 UTC').waitFor();
  await credits(s).getByText('Every key of the consumer spends this balance.').waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  // Keyboard: the dialog opens on the amount, Escape closes it and gives the focus back.
  const topUp = credits(s).getByRole('button', { name: 'Top up…' });
  await topUp.focus();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Top up or set the balance' });
  await dialog.waitFor();
  expect(await focusedId(s)).toBe('credits-amount');
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  // The focus returns to the opener in an effect after the dialog goes.
  await page.waitForFunction((button) => button === document.activeElement, await topUp.elementHandle());

  // +500, typed and sent with Enter: 1,500 on the page and through the API.
  await page.keyboard.press('Enter');
  await dialog.waitFor();
  await page.keyboard.type('500');
  await page.keyboard.press('Enter');
  await page
    .getByRole('status')
    .filter({ hasText: 'Added 500 credits: the balance holds 1,500 now.' })
    .waitFor();
  await dialog.waitFor({ state: 'detached' });
  await showsBalance(s, '1,500');
  expect(await consumerCredits()).toMatchObject({ remaining: 1500, refill: MONTHLY.refill });

  // Set to 0: the refill stays.
  await topUp.click();
  await dialog.getByLabel('Set to, whatever was spent').check();
  await dialog.getByLabel('Amount').fill('0');
  await dialog.getByRole('button', { name: 'Set balance' }).click();
  await page.getByRole('status').filter({ hasText: 'The balance is set to 0 credits.' }).waitFor();
  await showsBalance(s, '0');
  expect(await consumerCredits()).toMatchObject({ remaining: 0, refill: MONTHLY.refill });

  // Amounts that are not whole numbers of credits: said in words, nothing sent, the balance as it was.
  const sent = creditCalls(s);
  await topUp.click();
  for (const [mode, typed, said] of [
    ['Add to what it holds', '-3', 'The amount cannot be negative'],
    [
      'Add to what it holds',
      '1.5',
      'The amount must be a whole number of credits, such as 500: “1.5” is not one.',
    ],
    ['Set to, whatever was spent', '1.5', 'The amount must be a whole number of credits'],
    ['Set to, whatever was spent', 'lots', 'The amount must be a whole number of credits'],
    ['Add to what it holds', '0', 'Adding 0 credits changes nothing'],
    ['Add to what it holds', '', 'Enter the amount'],
    [
      'Set to, whatever was spent',
      '9007199254740992',
      'The amount can be at most 9,007,199,254,740,991 credits.',
    ],
  ] as const) {
    await dialog.getByLabel(mode).check();
    await dialog.getByLabel('Amount').fill(typed);
    await dialog
      .getByRole('button', { name: mode.startsWith('Add') ? 'Add credits' : 'Set balance' })
      .click();
    await dialog.getByRole('alert').filter({ hasText: said }).waitFor();
    expect(await dialog.getByLabel('Amount').getAttribute('aria-invalid')).toBe('true');
  }
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  expect(creditCalls(s)).toBe(sent);
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
  expect(await consumerCredits()).toMatchObject({ remaining: 0 });
  await showsBalance(s, '0');

  // The consumer list shows each balance too.
  await visit(s, 'consumers', 'Consumers');
  const listed = page.locator(`tr[data-consumer-id="${consumerId}"] td[data-credits]`);
  await listed.waitFor();
  expect(await listed.innerText()).toBe('0');
});

it('shows a credit spent through the proxy once the page is read again', async () => {
  expect((await tollgate.admin('POST', '/tollgate/credits', { consumerId, set: 10 })).status).toBe(200);
  const s = tab.session;
  await visit(s, `consumers/${consumerId}`, 'Acme');
  await showsBalance(s, '10');
  expect(await hit(tollgate, consumerKey.secret)).toBe(200);
  await s.page.reload();
  await s.page.getByRole('heading', { level: 1, name: 'Acme' }).waitFor();
  await showsBalance(s, '9');
  expect(await consumerCredits()).toMatchObject({ remaining: 9 });
  // The key holds no balance of its own: its page says that its consumer’s is spent, and how much is left.
  await visit(s, `keys/${consumerKey.id}`, 'acme-prod');
  await credits(s)
    .getByText('No balance of its own: its requests spend its consumer Acme’s balance, 9 credits now.')
    .waitFor();
  expect(await credits(s).getByRole('link', { name: 'Acme' }).getAttribute('href')).toBe(
    `#/consumers/${consumerId}`,
  );
  expect(await credits(s).getByText('requests are not charged credits').count()).toBe(0);
});

it('says that a key without a plan of its own is limited by its consumer’s plan when no default limit is set', async () => {
  expect(
    (
      await tollgate.admin('POST', '/rate-limit/create', {
        rateLimitId: 'acme-shared',
        limits: [{ name: 'shared-hourly', limit: 50, period: 'hour' }],
      })
    ).status,
  ).toBe(201);
  expect(
    (await tollgate.admin('PATCH', `/tollgate/consumers/${consumerId}`, { rateLimitId: 'acme-shared' }))
      .status,
  ).toBe(200);
  const s = tab.session;
  try {
    await visit(s, `keys/${consumerKey.id}`, 'acme-prod');
    const limits = s.page.getByRole('region', { name: 'Limits' });
    await limits.getByText('No plan of its own and no default limit: its consumer’s limits apply.').waitFor();
    await limits.getByRole('cell', { name: 'consumer.shared-hourly', exact: true }).waitFor();
    expect(await limits.getByText('DEFAULT_RATE_LIMIT').count()).toBe(0);
    const detail = (await tollgate.admin('GET', `/consumer-api-key/${consumerKey.id}`)).body;
    expect(detail.rateLimitId).toBeNull();
    expect(detail.usage.rateLimits.limits.map((l: { scope: string }) => l.scope)).toEqual(['consumer']);
  } finally {
    await tollgate.admin('PATCH', `/tollgate/consumers/${consumerId}`, { rateLimitId: null });
  }
});

it('gives a key without a balance one by a top-up, edits its refill, and removes it once confirmed', async () => {
  const key = (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'no-balance' })).body;
  expect(key.credits ?? null).toBeNull();
  const s = tab.session;
  const { page } = s;
  await visit(s, `keys/${key.id}`, 'no-balance');
  await credits(s).getByText('No prepaid balance: requests are not charged credits.').waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  await credits(s).getByRole('button', { name: 'Top up…' }).click();
  const topUp = page.getByRole('dialog', { name: 'Top up or set the balance' });
  await topUp.getByText('It holds no prepaid balance yet: this gives it one, with no refill.').waitFor();
  await topUp.getByLabel('Amount').fill('200');
  await topUp.getByRole('button', { name: 'Add credits' }).click();
  await showsBalance(s, '200');
  await credits(s).getByText('No refill').waitFor();
  expect(await keyCredits(key.id)).toEqual({ remaining: 200, refill: null, lowAt: null });

  // A daily refill of 100, the balance set to 100 with it; a day of the month out of range is refused first.
  await credits(s).getByRole('button', { name: 'Balance and refill…' }).click();
  const refill = page.getByRole('dialog', { name: 'Balance and refill' });
  await refill.waitFor();
  expect(await focusedId(s)).toBe('credits-remaining');
  expect(await refill.getByLabel('Balance').inputValue()).toBe('200');
  await refill.getByLabel('Every month').check();
  await refill.getByLabel('Refill to').fill('100');
  await refill.getByLabel('Day of the month').fill('32');
  await refill.getByLabel('Alert when it falls below (optional)').fill('ten');
  const patches = s.requests.length;
  await refill.getByRole('button', { name: 'Save balance' }).click();
  await refill
    .getByRole('alert')
    .filter({ hasText: 'The day of the month must be a whole number from 1 to 31.' })
    .waitFor();
  await refill
    .getByRole('alert')
    .filter({ hasText: 'The alert level must be a whole number of credits, such as 500: “ten” is not one.' })
    .waitFor();
  expect(s.requests.length).toBe(patches);
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await refill.getByLabel('Every day').check();
  await refill.getByLabel('Balance').fill('100');
  await refill.getByLabel('Alert when it falls below (optional)').fill('25');
  await refill.getByRole('button', { name: 'Save balance' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: 'The balance is set to 100 credits. Refills to 100 daily at 00:00 UTC.' })
    .waitFor();
  await credits(s).getByText('Refills to 100 daily at 00:00 UTC').waitFor();
  await showsBalance(s, '100');
  await credits(s).getByText('below 25 (credits.low)').waitFor();
  expect(await keyCredits(key.id)).toEqual({
    remaining: 100,
    refill: { amount: 100, interval: 'day' },
    lowAt: 25,
  });

  // Removing it: the dialog starts on Cancel.
  await credits(s).getByRole('button', { name: 'Remove balance…' }).click();
  const remove = page.getByRole('dialog', { name: 'Remove the prepaid balance?' });
  await remove.waitFor();
  await focusedId(s);
  expect(
    await remove.getByRole('button', { name: 'Cancel' }).evaluate((el) => el === document.activeElement),
  ).toBe(true);
  await remove.getByRole('button', { name: 'Remove balance' }).click();
  await credits(s).getByText('No prepaid balance: requests are not charged credits.').waitFor();
  expect(await keyCredits(key.id)).toBeNull();
});

it('shows every credit action unavailable, naming keys:write, to a token without it', async () => {
  const made = await tollgate.admin('POST', '/tollgate/admin-tokens', {
    name: 'read only',
    scopes: ['keys:read'],
  });
  expect(made.status).toBe(201);
  const s = await openConsole(suite.browser, tollgate);
  try {
    await signIn(s, made.body.secret);
    await visit(s, `consumers/${consumerId}`, 'Acme');
    await credits(s).locator('[data-credits-remaining]').waitFor();
    for (const name of ['Top up…', 'Balance and refill…', 'Remove balance…']) {
      const button = credits(s).getByRole('button', { name: `${name} (needs keys:write)`, exact: true });
      await button.waitFor();
      expect(await button.isDisabled()).toBe(true);
    }
    expect(await seriousAccessibilityViolations(s.page)).toEqual([]);
    expect(creditCalls(s)).toBe(0);
    expect(unexpectedErrors(s)).toEqual([]);
  } finally {
    await s.context.close();
  }
});
