/**
 * Billing exports in the console, in Chromium against a built Tollgate: create a CloudEvents export with
 * a credential (write-only: never shown again, only said to be stored), see it listed, run it by hand and
 * read the run in its log, and delete it through a dialog that starts on Cancel; a run's sends (customer,
 * key, bucket, units, answer) and the keys it skipped for want of a customer id, shown as the API answers
 * them; a stripe-v2 export's stream URL, asked only for that type. Checked through the API.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hit, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { storedMinuteRequests } from '../helpers/stored-usage.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import {
  consoleSuite,
  rowWith,
  seriousAccessibilityViolations,
  signedInTab,
  visit,
} from './helpers/console-browser.js';

let tollgate: Tollgate;
/** A CloudEvents receiver that takes everything. */
let receiver: Server;
let receiverUrl: string;
/** Tollgate's clock: a minute of traffic ends when the test moves it there, not when a real one does. */
const clock = new TestClock();

// A minute's usage is sent as soon as the minute ends (no settling time): a run by hand sends it.
const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(202).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
  },
  120_000,
  { BILLING_EXPORT_SETTLE_SECONDS: '0', ...clock.env },
);
afterAll(() => new Promise((resolve) => receiver?.close(resolve)));
const tab = signedInTab(suite, () => tollgate.rootToken);

const CREDENTIAL = 'sk_test_console_only_once';

it('creates an export with a write-only credential, runs it by hand, reads its runs and deletes it', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'billing-exports', 'Billing exports');
  await page.getByText('No billing export yet.').waitFor();
  await page.getByLabel('Service').selectOption('cloudevents');
  await page.getByLabel('URL', { exact: true }).fill(receiverUrl);
  await page.getByLabel('Event name').fill('api.requests');
  await page.getByLabel('Buckets of one').selectOption('minute');
  await page.getByLabel('Usage of each').selectOption('key');
  await page.getByLabel('Credential').fill(CREDENTIAL);
  await page.getByRole('button', { name: 'Create export' }).click();
  await page.getByRole('status').filter({ hasText: 'The cloudevents export is created.' }).waitFor();
  const [created] = (await tollgate.admin('GET', '/tollgate/billing-exports')).body.billingExports;
  expect(created).toMatchObject({
    type: 'cloudevents',
    url: receiverUrl,
    eventName: 'api.requests',
    interval: 'minute',
    subject: 'key',
    hasCredential: true,
  });
  const row = rowWith(page, receiverUrl);
  // The list is read again after the creation: wait for the new row before reading its cells.
  await row.getByRole('cell', { name: 'api.requests', exact: true }).waitFor();
  expect(await row.getByRole('cell').allInnerTexts()).toEqual(
    expect.arrayContaining(['api.requests', 'per minute, each key', 'stored', 'working']),
  );
  // The credential went out once and is shown nowhere, not even in the emptied form.
  expect(await page.getByLabel('Credential').inputValue()).toBe('');
  expect(await page.content()).not.toContain(CREDENTIAL);
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  await row.getByRole('link', { name: 'cloudevents' }).click();
  await page.getByRole('heading', { level: 1, name: 'Billing export runs' }).waitFor();
  await page.getByText(receiverUrl).waitFor();
  await page.getByRole('button', { name: 'Run now' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^The run sent \d+ of \d+ planned, 0 failed\.$/ })
    .waitFor();
  const runs = (await tollgate.admin('GET', `/tollgate/billing-exports/${created.id}/runs`)).body.runs as {
    id: string;
    startedBy: string;
  }[];
  expect(runs[0]).toMatchObject({ startedBy: 'manual' });
  await page.locator(`tr[data-run-id="${runs[0]!.id}"]`).getByText('by hand').waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  await page.getByRole('link', { name: 'All billing exports' }).click();
  await page.getByRole('heading', { level: 1, name: 'Billing exports' }).waitFor();
  await row.getByRole('button', { name: `Delete cloudevents export ${created.id}` }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete the cloudevents export?' });
  await dialog.waitFor();
  await page.waitForFunction(() => document.activeElement?.closest('dialog') !== null);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  expect((await tollgate.admin('GET', `/tollgate/billing-exports/${created.id}`)).status).toBe(200);
  await row.getByRole('button', { name: `Delete cloudevents export ${created.id}` }).click();
  await dialog.getByRole('button', { name: 'Delete export' }).click();
  await page.getByRole('status').filter({ hasText: 'The cloudevents export is deleted.' }).waitFor();
  await row.waitFor({ state: 'detached' });
  expect((await tollgate.admin('GET', `/tollgate/billing-exports/${created.id}`)).status).toBe(404);
});

it('says in plain words that a Stripe export needs its credential, and keeps the form', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'billing-exports', 'Billing exports');
  await page.getByLabel('Service').selectOption('stripe');
  await page.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9');
  await page.getByLabel('Event name').fill('api_requests');
  await page.getByRole('button', { name: 'Create export' }).click();
  await page.getByRole('alert').waitFor();
  expect(await page.getByLabel('Event name').inputValue()).toBe('api_requests');
  expect((await tollgate.admin('GET', '/tollgate/billing-exports')).body.billingExports).toEqual([]);
});

it('shows what each run sent, and the keys with usage it skipped for want of a customer id', async () => {
  const { page } = tab.session;
  const created = await tollgate.admin('POST', '/tollgate/billing-exports', {
    type: 'cloudevents',
    url: receiverUrl,
    eventName: 'api.requests',
    interval: 'minute',
    subject: 'key',
  });
  expect(created.status).toBe(201);
  const billed = await tollgate.admin('POST', '/consumer-api-key/create', {
    name: 'billed',
    externalId: 'cus_console',
  });
  const unbilled = await Promise.all(
    ['no-customer-1', 'no-customer-2'].map((name) =>
      tollgate.admin('POST', '/consumer-api-key/create', { name }),
    ),
  );
  for (let i = 0; i < 3; i++) expect(await hit(tollgate, billed.body.secret)).toBe(200);
  for (const key of unbilled) expect(await hit(tollgate, key.body.secret)).toBe(200);
  // The export reads what is stored: the keys' five requests reach Postgres, then the minute of that
  // traffic ends, and a run after it sends the billed key and skips the others.
  const keyIds = [billed, ...unbilled].map((k) => k.body.id as string);
  const stored = await waitFor(
    () => storedMinuteRequests({ databaseUrl: suite.fleet.database!.url }, keyIds),
    (n) => n === 5,
    { timeoutMs: 10_000, everyMs: 100 },
  );
  expect(stored.value).toBe(5);
  clock.after(MINUTE_MS, 100);
  type Run = { id: string; sends: { customer: string; value: number }[]; skippedSubjects: string[] };
  const { value: runs } = await waitFor(
    async () => {
      await tollgate.admin('POST', `/tollgate/billing-exports/${created.body.id}/runs`);
      return (await tollgate.admin('GET', `/tollgate/billing-exports/${created.body.id}/runs`)).body
        .runs as Run[];
    },
    (all) => all.some((r) => r.sends.length > 0),
    { timeoutMs: 10_000, everyMs: 500 },
  );
  const sent = runs.find((r) => r.sends.length > 0)!;
  expect(sent.sends.map((s) => [s.customer, s.value])).toEqual([['cus_console', 3]]);
  expect([...sent.skippedSubjects].sort()).toEqual(unbilled.map((k) => k.body.id as string).sort());

  await visit(tab.session, `billing-exports/${created.body.id}`, 'Billing export runs');
  const row = page.locator(`tr[data-run-id="${sent.id}"]`);
  await row.getByText('2 keys with usage skipped: no customer id').waitFor();
  await row.getByText('1 send, 2 skipped').click();
  const send = row
    .getByRole('table', { name: /^Sends of the run/ })
    .getByRole('row')
    .nth(1);
  expect(await send.getByRole('cell').allInnerTexts()).toEqual([
    'cus_console',
    billed.body.id,
    expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:00 UTC$/),
    '3',
    'delivered (202)',
  ]);
  const skipped = row.getByRole('list', { name: 'Skipped' });
  for (const key of unbilled)
    expect(await skipped.getByRole('link', { name: key.body.id }).getAttribute('href')).toBe(
      `#/keys/${key.body.id}`,
    );
  await row.getByText('no external id').waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
});

it('asks for a stream URL only for Stripe’s v2 stream, sends it, and shows it on the runs page', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'billing-exports', 'Billing exports');
  await page.getByLabel('Service').selectOption('metronome');
  expect(await page.getByLabel('Stream URL').count()).toBe(0);
  await page.getByLabel('Service').selectOption('stripe-v2');
  await page.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9');
  await page.getByLabel('Stream URL').fill('http://127.0.0.1:10');
  await page.getByLabel('Event name').fill('api_requests');
  await page.getByLabel('Credential').fill(CREDENTIAL);
  await page.getByRole('button', { name: 'Create export' }).click();
  await page.getByRole('status').filter({ hasText: 'The stripe-v2 export is created.' }).waitFor();
  const exports = (await tollgate.admin('GET', '/tollgate/billing-exports')).body.billingExports as {
    id: string;
    type: string;
  }[];
  const created = exports.find((e) => e.type === 'stripe-v2')!;
  expect(created).toMatchObject({ url: 'http://127.0.0.1:9', streamUrl: 'http://127.0.0.1:10' });
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await rowWith(page, 'http://127.0.0.1:9').getByRole('link', { name: 'stripe-v2' }).click();
  await page.getByRole('heading', { level: 1, name: 'Billing export runs' }).waitFor();
  await page.getByText('http://127.0.0.1:10').waitFor();
  expect((await tollgate.admin('DELETE', `/tollgate/billing-exports/${created.id}`)).status).toBe(200);
});
