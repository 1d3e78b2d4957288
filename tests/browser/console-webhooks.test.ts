/**
 * Webhooks in the console, in Chromium against a built Tollgate and a real receiver that verifies with
 * the Standard Webhooks library: create one for `key.created` (its signing secret shown once, with a
 * copy button, and the one the receiver verifies with), read its delivery log (the receiver's 500),
 * retry a delivery until the receiver takes it, disable, enable and delete it. Checked through the API.
 */
import { waitFor } from '../helpers/poll.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  clipboardText,
  consoleSuite,
  rowWith,
  seriousAccessibilityViolations,
  signedInTab,
  visit,
} from './helpers/console-browser.js';

let tollgate: Tollgate;
let receiver: WebhookReceiver;

const suite = consoleSuite(async (started) => {
  tollgate = started;
  receiver = await WebhookReceiver.start();
});
afterAll(() => receiver?.close());
const tab = signedInTab(suite, () => tollgate.rootToken);

interface DeliveryView {
  id: string;
  state: string;
  lastStatus: number | null;
}
const deliveries = async (webhookId: string) =>
  (await tollgate.admin('GET', `/tollgate/webhooks/${webhookId}/deliveries`)).body
    .deliveries as DeliveryView[];

it('creates a webhook, shows its delivery log, retries a failed delivery, disables, enables and deletes it', async () => {
  // The receiver refuses the first attempt of each event, and takes the next.
  receiver.answer = (attempt) => (attempt === 1 ? 500 : 204);
  const { page } = tab.session;
  await visit(tab.session, 'webhooks', 'Webhooks');
  await page.getByText('No webhook yet.').waitFor();
  await page.getByLabel('URL', { exact: true }).fill(receiver.url);
  await page.getByLabel('Description').fill('Billing system');
  const events = page.getByRole('group', { name: 'Events' });
  await events.getByLabel('key.created').check();
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `The webhook to ${receiver.url} is created.` })
    .waitFor();
  const secret = await page.getByLabel(`Signing secret of the webhook to ${receiver.url}`).inputValue();
  expect(secret).toMatch(/^whsec_/);
  await page.getByRole('button', { name: 'Copy' }).click();
  expect(await clipboardText(page)).toBe(secret);
  receiver.secret = secret;
  const [webhook] = (await tollgate.admin('GET', '/tollgate/webhooks')).body.webhooks;
  expect(webhook).toMatchObject({
    url: receiver.url,
    description: 'Billing system',
    events: ['key.created'],
    enabled: true,
  });
  const row = rowWith(page, receiver.url);
  expect(await row.innerText()).toContain('key.created');
  expect(await page.locator('table').innerText()).not.toContain(secret);
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  const key = (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'hooked' })).body;
  await waitFor(
    () => deliveries(webhook.id),
    (list) => list.some((d) => d.lastStatus === 500),
    { timeoutMs: 20_000 },
  );
  await row.getByRole('link', { name: receiver.url }).click();
  await page.getByRole('heading', { level: 1, name: 'Webhook deliveries' }).waitFor();
  const delivery = rowWith(page, 'key.created');
  await delivery.getByText('HTTP 500').waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await delivery.getByRole('button', { name: /^Retry now: key\.created/ }).click();
  await page.getByRole('status').filter({ hasText: 'The key.created event is sent again now' }).waitFor();
  await waitFor(
    () => deliveries(webhook.id),
    (list) => list[0]?.state === 'delivered',
    { timeoutMs: 20_000 },
  );
  expect([...receiver.events.values()].map((e) => `${e.type} ${String(e.data.consumerApiKeyId)}`)).toEqual([
    `key.created ${key.id}`,
  ]);
  expect(receiver.attempts.every((a) => a.verified)).toBe(true);
  await page.reload();
  await rowWith(page, 'key.created').getByText('HTTP 204').waitFor();

  await page.getByRole('link', { name: 'All webhooks' }).click();
  await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
  await row.getByRole('button', { name: `Disable ${receiver.url}` }).click();
  await page.getByRole('status').filter({ hasText: 'is disabled.' }).waitFor();
  expect((await tollgate.admin('GET', `/tollgate/webhooks/${webhook.id}`)).body.enabled).toBe(false);
  await row.getByRole('button', { name: `Enable ${receiver.url}` }).click();
  await page.getByRole('status').filter({ hasText: 'is enabled.' }).waitFor();
  expect((await tollgate.admin('GET', `/tollgate/webhooks/${webhook.id}`)).body.enabled).toBe(true);

  // Deleting starts on Cancel: Enter keeps the webhook.
  await row.getByRole('button', { name: `Delete ${receiver.url}` }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete this webhook?' });
  await dialog.waitFor();
  await page.waitForFunction(() => document.activeElement?.closest('dialog') !== null);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  expect((await tollgate.admin('GET', `/tollgate/webhooks/${webhook.id}`)).status).toBe(200);
  await row.getByRole('button', { name: `Delete ${receiver.url}` }).click();
  await dialog.getByRole('button', { name: 'Delete webhook' }).click();
  await page.getByRole('status').filter({ hasText: 'is deleted.' }).waitFor();
  await row.waitFor({ state: 'detached' });
  expect((await tollgate.admin('GET', `/tollgate/webhooks/${webhook.id}`)).status).toBe(404);
});

it('starts with no event ticked, and says in plain words what is wrong when none is chosen', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'webhooks', 'Webhooks');
  await page.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9/none');
  const events = page.getByRole('group', { name: 'Events' });
  expect(await events.getByRole('checkbox').count()).toBeGreaterThan(1);
  expect(await events.getByRole('checkbox', { checked: true }).count()).toBe(0);
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.getByRole('alert').filter({ hasText: 'Events' }).waitFor();
  const urls = ((await tollgate.admin('GET', '/tollgate/webhooks')).body.webhooks as { url: string }[]).map(
    (w) => w.url,
  );
  expect(urls).not.toContain('http://127.0.0.1:9/none');
});

it('edits a webhook’s URL, description and events in place', async () => {
  const made = await tollgate.admin('POST', '/tollgate/webhooks', {
    url: 'http://127.0.0.1:9/before',
    description: 'Before',
    events: ['key.created'],
  });
  expect(made.status).toBe(201);
  const { page } = tab.session;
  await visit(tab.session, 'webhooks', 'Webhooks');
  await page.getByRole('button', { name: 'Edit http://127.0.0.1:9/before' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit the webhook' });
  await dialog.waitFor();
  expect(await dialog.getByLabel('URL').inputValue()).toBe('http://127.0.0.1:9/before');
  expect(await dialog.getByRole('group', { name: 'Events' }).getByLabel('key.created').isChecked()).toBe(
    true,
  );
  await dialog.getByLabel('URL').fill('http://127.0.0.1:9/after');
  await dialog.getByLabel('Description').fill('After');
  await dialog.getByRole('group', { name: 'Events' }).getByLabel('key.deleted').check();
  await dialog.getByRole('button', { name: 'Save webhook' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: 'The webhook to http://127.0.0.1:9/after is saved.' })
    .waitFor();
  await dialog.waitFor({ state: 'detached' });
  const after = (await tollgate.admin('GET', `/tollgate/webhooks/${made.body.id}`)).body;
  expect(after).toMatchObject({
    url: 'http://127.0.0.1:9/after',
    description: 'After',
    events: ['key.created', 'key.deleted'],
  });
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
});

it('rotates a webhook’s signing secret: the new one is shown once, and the next delivery is signed with it', async () => {
  const rotated = await WebhookReceiver.start('/rotated');
  try {
    const created = await tollgate.admin('POST', '/tollgate/webhooks', {
      url: rotated.url,
      events: ['key.created'],
    });
    const oldSecret = created.body.secret as string;
    const { page } = tab.session;
    await visit(tab.session, 'webhooks', 'Webhooks');
    await rowWith(page, rotated.url)
      .getByRole('button', { name: `Rotate secret of ${rotated.url}` })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Rotate this webhook’s signing secret?' });
    await dialog.waitFor();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `The webhook to ${rotated.url} has a new signing secret.` })
      .waitFor();
    const secret = await page.getByLabel(`Signing secret of the webhook to ${rotated.url}`).inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(oldSecret);
    expect(tab.session.requests.filter((u) => u.includes(secret.slice(6)))).toEqual([]);
    const audit = await tollgate.admin('GET', `/tollgate/audit-log?targetId=${created.body.id as string}`);
    expect(audit.body.auditLog[0]).toMatchObject({ action: 'webhook.rotate_secret' });
    expect(JSON.stringify(audit.body)).not.toContain(secret.slice(6));

    // The receiver verifies with the new secret only: the next event arrives signed with it.
    rotated.secret = secret;
    const key = (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'after-rotation' })).body;
    await waitFor(
      () => Promise.resolve(rotated.ofType('key.created')),
      (events) => events.some((e) => e.data.consumerApiKeyId === key.id),
      { timeoutMs: 20_000 },
    );
    expect(rotated.attempts.every((a) => a.verified)).toBe(true);
  } finally {
    await tollgate.admin('GET', '/tollgate/webhooks').then(async (list) => {
      for (const w of list.body.webhooks as { id: string; url: string }[])
        if (w.url === rotated.url) await tollgate.admin('DELETE', `/tollgate/webhooks/${w.id}`);
    });
    await rotated.close();
  }
});
