/**
 * Consumers in the console, in Chromium against a built Tollgate: create one with a plan, find it by the
 * start of its name, read its shared limits and its keys, edit it, give a key to it from the key's page,
 * and delete it (with its keys, the dialog says how many and starts on Cancel). Every change is checked
 * through the management API; axe finds nothing serious on the pages.
 */
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
  expect(
    (
      await tollgate.admin('POST', '/rate-limit/create', {
        rateLimitId: 'shared',
        limit: 600,
        period: 'minute',
      })
    ).status,
  ).toBe(201);
});
const tab = signedInTab(suite, () => tollgate.rootToken);

const consumer = async (id: string) => tollgate.admin('GET', `/tollgate/consumers/${id}`);

it('creates a consumer with a plan, finds it by name, shows its shared limits and keys, and edits it', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'consumers', 'Consumers');
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await page.getByRole('link', { name: 'Create consumer' }).click();
  await page.getByRole('heading', { level: 1, name: 'Create a consumer' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('Acme Corp');
  await page.getByLabel('External ID').fill('acct-1');
  await page.getByLabel('Plan id').fill('shared');
  await page.getByLabel('Metadata (JSON object)').fill('{"tier":"gold"}');
  await page.getByRole('button', { name: 'Create consumer' }).click();
  await page.getByRole('heading', { level: 1, name: 'Acme Corp' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'The consumer Acme Corp is created.' }).waitFor();
  const id = new URL(page.url()).hash.split('/')[2]!;
  expect((await consumer(id)).body).toMatchObject({
    name: 'Acme Corp',
    externalId: 'acct-1',
    rateLimitId: 'shared',
    metadata: { tier: 'gold' },
    keyCount: 0,
  });

  const key = (
    await tollgate.admin('POST', '/consumer-api-key/create', { name: 'acme-prod', consumerId: id })
  ).body;
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Acme Corp' }).waitFor();
  const limits = page.getByRole('region', { name: 'Limits' });
  await rowWith(page, 'the consumer (all its keys)').waitFor();
  expect(await limits.getByRole('cell').allInnerTexts()).toEqual(
    expect.arrayContaining(['consumer.minute', '600', 'minute']),
  );
  await page.getByRole('region', { name: 'Keys' }).getByRole('link', { name: 'acme-prod' }).waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);

  await tollgate.admin('POST', '/tollgate/consumers', { name: 'Other' });
  await visit(tab.session, 'consumers', 'Consumers');
  await page.getByLabel('Name or external ID').fill('Acm');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-consumer-id]').length === 1);
  expect(await rowWith(page, 'Acme Corp').getByRole('cell').allInnerTexts()).toEqual(
    expect.arrayContaining(['Acme Corp', 'acct-1', 'shared', '1']),
  );
  await rowWith(page, 'Acme Corp').getByRole('link', { name: 'Acme Corp' }).click();
  await page.getByRole('heading', { level: 1, name: 'Acme Corp' }).waitFor();
  await page.getByRole('link', { name: 'Edit' }).click();
  await page.getByRole('heading', { level: 1, name: 'Edit the consumer Acme Corp' }).waitFor();
  expect(await page.getByLabel('Plan id').inputValue()).toBe('shared');
  await page.getByLabel('Name', { exact: true }).fill('Acme Corporation');
  // Emptying the plan unbinds it; emptying the external id clears it.
  await page.getByLabel('Plan id').fill('');
  await page.getByLabel('External ID').fill('');
  await page.getByRole('button', { name: 'Save consumer' }).click();
  await page.getByRole('status').filter({ hasText: 'The consumer Acme Corporation is saved.' }).waitFor();
  expect((await consumer(id)).body).toMatchObject({
    name: 'Acme Corporation',
    externalId: null,
    rateLimitId: null,
    keyCount: 1,
  });
  await page.getByText('No plan is bound').waitFor();
  expect(key.consumerId).toBe(id);
});

it('says in plain words when the external id is taken, and keeps the form', async () => {
  expect(
    (await tollgate.admin('POST', '/tollgate/consumers', { name: 'First', externalId: 'dup' })).status,
  ).toBe(201);
  const { page } = tab.session;
  await visit(tab.session, 'consumers/new', 'Create a consumer');
  await page.getByLabel('Name', { exact: true }).fill('Second');
  await page.getByLabel('External ID').fill('dup');
  await page.getByRole('button', { name: 'Create consumer' }).click();
  await page.getByRole('alert').filter({ hasText: 'dup' }).waitFor();
  expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('Second');
});

it('shows a key’s consumer as a link and changes it from the key’s page, detaching it only once confirmed', async () => {
  const a = (await tollgate.admin('POST', '/tollgate/consumers', { name: 'Team A' })).body;
  const b = (await tollgate.admin('POST', '/tollgate/consumers', { name: 'Team B' })).body;
  const key = (
    await tollgate.admin('POST', '/consumer-api-key/create', { name: 'moving', consumerId: a.consumerId })
  ).body;
  const { page } = tab.session;
  await visit(tab.session, `keys/${key.id}`, 'moving');
  const section = page.getByRole('region', { name: 'Consumer' });
  await section.getByRole('link', { name: 'Team A' }).waitFor();
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await section.getByLabel('Consumer id').fill(b.consumerId);
  await section.getByRole('button', { name: 'Change consumer' }).click();
  await section.getByRole('link', { name: 'Team B' }).waitFor();
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.consumerId).toBe(b.consumerId);

  await section.getByLabel('Consumer id').fill('con_nobody');
  await section.getByRole('button', { name: 'Change consumer' }).click();
  await section.getByRole('alert').waitFor();
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.consumerId).toBe(b.consumerId);

  // Detaching takes the key out of the consumer's limits, credits and billing: asked first, on Cancel.
  await section.getByRole('button', { name: 'Detach from consumer…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Detach the key from its consumer?' });
  await dialog
    .getByText(/shared limits no longer count it, its requests no longer spend the consumer’s credits/)
    .waitFor();
  await page.waitForFunction(() => document.activeElement?.closest('dialog') != null);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.consumerId).toBe(b.consumerId);
  await section.getByRole('button', { name: 'Detach from consumer…' }).click();
  await dialog.getByRole('button', { name: 'Detach the key' }).click();
  await section.getByText('The key belongs to no consumer').waitFor();
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.consumerId).toBeNull();
  await section.getByRole('link', { name: 'Team B' }).waitFor({ state: 'detached' });
});

it('finds consumers by any part of their name or external id, in any case', async () => {
  const made = await Promise.all(
    [
      { name: 'Globex Industries', externalId: 'cus_GLOBEX_9' },
      { name: 'Initech', externalId: 'cus_initech' },
      { name: 'globe trotters', externalId: null },
    ].map(
      async (body) => (await tollgate.admin('POST', '/tollgate/consumers', body)).body.consumerId as string,
    ),
  );
  const [globex, initech, trotters] = made;
  const { page } = tab.session;
  const found = async (text: string, ids: readonly string[]) => {
    await visit(tab.session, 'consumers', 'Consumers');
    await page.getByLabel('Name or external ID').fill(text);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForFunction(
      (want) =>
        [...document.querySelectorAll('tbody tr[data-consumer-id]')]
          .map((r) => r.getAttribute('data-consumer-id'))
          .sort()
          .join() === want,
      [...ids].sort().join(),
    );
    const api = await tollgate.admin('GET', `/tollgate/consumers?search=${encodeURIComponent(text)}`);
    expect(api.body.consumers.map((c: { consumerId: string }) => c.consumerId).sort()).toEqual(
      [...ids].sort(),
    );
  };
  await found('GLOBE', [globex!, trotters!]); // any case, from the start
  await found('industries', [globex!]); // inside the name
  await found('globex_9', [globex!]); // the external id, in any case
  await found('cus_initech', [initech!]);
  await visit(tab.session, 'consumers', 'Consumers');
  await page.getByLabel('Name or external ID').fill('nobody-here');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No consumer’s name or external ID holds that.').waitFor();
});

it('deletes a consumer with keys once confirmed: the dialog says how many and starts on Cancel', async () => {
  const c = (await tollgate.admin('POST', '/tollgate/consumers', { name: 'Leaving' })).body;
  const keys = await Promise.all(
    ['leaving-1', 'leaving-2'].map(
      async (name) =>
        (await tollgate.admin('POST', '/consumer-api-key/create', { name, consumerId: c.consumerId })).body,
    ),
  );
  const { page } = tab.session;
  await visit(tab.session, `consumers/${c.consumerId}`, 'Leaving');
  await page.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete the consumer Leaving?' });
  await dialog.getByText('2 keys belong to this consumer. Deleting it detaches them first').waitFor();
  await page.waitForFunction(() => document.activeElement?.closest('dialog') !== null);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  expect((await consumer(c.consumerId)).status).toBe(200);

  await page.getByRole('button', { name: 'Delete' }).click();
  await dialog.getByRole('button', { name: 'Detach 2 keys and delete' }).click();
  await page.getByRole('heading', { level: 1, name: 'Consumers' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'The consumer Leaving is deleted.' }).waitFor();
  expect((await consumer(c.consumerId)).status).toBe(404);
  for (const key of keys)
    expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.consumerId).toBeNull();
});

it('asks again, with the count, when a key joined the consumer after its page was read', async () => {
  const c = (await tollgate.admin('POST', '/tollgate/consumers', { name: 'Late' })).body;
  const { page } = tab.session;
  await visit(tab.session, `consumers/${c.consumerId}`, 'Late');
  await page.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete the consumer Late?' });
  await dialog.getByText('No key belongs to this consumer.').waitFor();
  await tollgate.admin('POST', '/consumer-api-key/create', { name: 'late-key', consumerId: c.consumerId });
  await dialog.getByRole('button', { name: 'Delete consumer' }).click();
  await dialog.getByRole('alert').filter({ hasText: '1 key belongs to this consumer now' }).waitFor();
  expect((await consumer(c.consumerId)).status).toBe(200);
  await dialog.getByRole('button', { name: 'Detach 1 key and delete' }).click();
  await page.getByRole('heading', { level: 1, name: 'Consumers' }).waitFor();
  expect((await consumer(c.consumerId)).status).toBe(404);
});

it('adds a key to a consumer from the consumer’s page', async () => {
  const c = (await tollgate.admin('POST', '/tollgate/consumers', { name: 'Growing' })).body;
  const { page } = tab.session;
  await visit(tab.session, `consumers/${c.consumerId}`, 'Growing');
  const keysSection = page.getByRole('region', { name: 'Keys' });
  await keysSection.getByRole('link', { name: 'Add a key' }).click();
  await page.getByRole('heading', { level: 1, name: 'Add a key to a consumer' }).waitFor();
  await page.getByRole('link', { name: 'Growing' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('growing-prod');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('heading', { level: 1, name: 'growing-prod' }).waitFor();
  const id = new URL(page.url()).hash.split('/')[2]!;
  expect((await tollgate.admin('GET', `/consumer-api-key/${id}`)).body.consumerId).toBe(c.consumerId);
  await page.getByRole('region', { name: 'Consumer' }).getByRole('link', { name: 'Growing' }).waitFor();
  expect((await consumer(c.consumerId)).body.keyCount).toBe(1);
});

it('offers the plans and consumers there are where their id is asked for', async () => {
  const c = (
    await tollgate.admin('POST', '/tollgate/consumers', { name: 'Picked', externalId: 'acct-picked' })
  ).body;
  const key = (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'picking' })).body;
  const { page } = tab.session;
  /** The values and labels a field's list of suggestions offers. */
  const offered = async (label: string) => {
    const field = page.getByLabel(label, { exact: true });
    const list = await field.getAttribute('list');
    expect(list).not.toBeNull();
    return page
      .locator(`datalist[id="${list}"] option`)
      .evaluateAll((options) => options.map((o) => `${(o as HTMLOptionElement).value} ${o.textContent}`));
  };
  await visit(tab.session, 'consumers/new', 'Create a consumer');
  await page.waitForFunction(() => document.querySelectorAll('datalist option').length > 0);
  expect(await offered('Plan id')).toContain('shared ');
  await visit(tab.session, `keys/${key.id}`, 'picking');
  await page.waitForFunction(() => document.querySelectorAll('datalist option').length > 0);
  expect(await offered('Consumer id')).toContain(`${c.consumerId} Picked (acct-picked)`);
  // Picking one gives the key to it.
  await page.getByLabel('Consumer id', { exact: true }).fill(c.consumerId);
  await page.getByRole('button', { name: 'Change consumer' }).click();
  await page.getByRole('region', { name: 'Consumer' }).getByRole('link', { name: 'Picked' }).waitFor();
});
