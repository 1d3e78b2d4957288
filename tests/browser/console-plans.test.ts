/**
 * Plans in the console, in Chromium against a built Tollgate: the list a page at a time, create, edit
 * and delete (a plan still bound to keys is refused with the API's message, and deleted with force
 * once confirmed). Each change is checked through the management API, and so is the body the console
 * sent: one unnamed fixed limit goes out in the seed's `{limit, period}` form.
 */
import type { Request } from 'playwright-core';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { consoleSuite, rowWith, signedInTab, visit, type ConsoleSession } from './helpers/console-browser.js';

let tollgate: Tollgate;

const suite = consoleSuite(async (started) => {
  tollgate = started;
});
const tab = signedInTab(suite, () => tollgate.rootToken);

const plan = async (id: string) => tollgate.admin('GET', `/rate-limit/${id}`);

/** Resolves the JSON body of the next request matching `method` and `path`. */
function nextBody(s: ConsoleSession, method: string, path: string): Promise<unknown> {
  return s.page
    .waitForRequest((r: Request) => r.method() === method && new URL(r.url()).pathname === path)
    .then((r) => r.postDataJSON() as unknown);
}

it('creates a plan with one limit, sent as the seed’s {limit, period}', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'plans', 'Plans');
  await page.getByRole('link', { name: 'Create plan' }).click();
  await page.getByRole('heading', { level: 1, name: 'Create a plan' }).waitFor();
  await page.getByLabel('Plan id').fill('silver');
  await page.getByLabel('Description').fill('Silver tier');
  await page.getByLabel('Requests').fill('500');
  await page.getByLabel('Per').selectOption('hour');
  const sent = nextBody(tab.session, 'POST', '/rate-limit/create');
  await page.getByRole('button', { name: 'Create plan' }).click();
  expect(await sent).toEqual({
    rateLimitId: 'silver',
    description: 'Silver tier',
    limit: 500,
    period: 'hour',
  });
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  expect((await plan('silver')).body).toMatchObject({
    rateLimitId: 'silver',
    description: 'Silver tier',
    limit: 500,
    period: 'hour',
    keyCount: 0,
  });
  expect(await rowWith(page, 'silver').getByRole('cell').nth(1).innerText()).toBe('500 per hour');
});

it('shows the API’s message when the id is taken, and keeps the form', async () => {
  expect(
    (await tollgate.admin('POST', '/rate-limit/create', { rateLimitId: 'taken', limit: 1, period: 'second' }))
      .status,
  ).toBe(201);
  const { page } = tab.session;
  await visit(tab.session, 'plans/new', 'Create a plan');
  await page.getByLabel('Plan id').fill('taken');
  await page.getByRole('button', { name: 'Create plan' }).click();
  await page
    .getByRole('alert')
    .filter({ hasText: 'A rate limit plan with id "taken" already exists' })
    .waitFor();
  expect(await page.getByLabel('Plan id').inputValue()).toBe('taken');
  expect((await plan('taken')).body).toMatchObject({ limit: 1, period: 'second' });
});

it('edits a plan’s description and limit; the key count links to its keys', async () => {
  expect(
    (
      await tollgate.admin('POST', '/rate-limit/create', {
        rateLimitId: 'bronze',
        description: 'Old',
        limit: 10,
        period: 'minute',
      })
    ).status,
  ).toBe(201);
  const key = (
    await tollgate.admin('POST', '/consumer-api-key/create', { name: 'on-bronze', rateLimitId: 'bronze' })
  ).body;
  const { page } = tab.session;
  await visit(tab.session, 'plans', 'Plans');
  await rowWith(page, 'bronze').getByRole('link', { name: 'Edit bronze' }).click();
  await page.getByRole('heading', { level: 1, name: 'Edit the plan bronze' }).waitFor();
  expect(await page.getByLabel('Description').inputValue()).toBe('Old');
  expect(await page.getByLabel('Requests').inputValue()).toBe('10');
  await page.getByLabel('Description').fill('Bronze tier');
  await page.getByLabel('Requests').fill('20');
  await page.getByLabel('Per').selectOption('week');
  const sent = nextBody(tab.session, 'PATCH', '/rate-limit/bronze');
  await page.getByRole('button', { name: 'Save plan' }).click();
  expect(await sent).toEqual({ description: 'Bronze tier', limit: 20, period: 'week' });
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'The plan bronze is saved.' }).waitFor();
  expect((await plan('bronze')).body).toMatchObject({
    description: 'Bronze tier',
    limit: 20,
    period: 'week',
    keyCount: 1,
  });

  await rowWith(page, 'bronze').getByRole('link', { name: '1 keys on bronze' }).click();
  await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
  await page.waitForFunction(
    (id) =>
      [...document.querySelectorAll('tbody tr[data-key-id]')]
        .map((r) => r.getAttribute('data-key-id'))
        .join() === id,
    key.id,
  );
  expect(await page.getByLabel('Plan').inputValue()).toBe('bronze');
});

it('deletes an unbound plan once confirmed; Enter, Enter on its dialog deletes nothing', async () => {
  expect(
    (await tollgate.admin('POST', '/rate-limit/create', { rateLimitId: 'unused', limit: 5, period: 'day' }))
      .status,
  ).toBe(201);
  const { page } = tab.session;
  await visit(tab.session, 'plans', 'Plans');
  const opener = rowWith(page, 'unused').getByRole('button', { name: 'Delete unused' });
  await opener.focus();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Delete the plan unused?' });
  await dialog.getByText('No key holds this plan.').waitFor();
  // The focus starts on Cancel: Enter closes the dialog, the next Enter opens it again.
  await page.waitForFunction(() => document.activeElement?.closest('dialog') !== null);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  // The focus goes back to the button that opened it (on a loaded machine, a moment after the close).
  await page.waitForFunction((button) => button === document.activeElement, await opener.elementHandle());
  await page.keyboard.press('Enter');
  await dialog.waitFor();
  await page.waitForFunction(() => document.activeElement?.closest('dialog') !== null);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  expect((await plan('unused')).status).toBe(200);
  await opener.click();
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
  expect((await plan('unused')).status).toBe(200);
  await rowWith(page, 'unused').getByRole('button', { name: 'Delete unused' }).click();
  await dialog.getByRole('button', { name: 'Delete plan' }).click();
  await page.getByRole('status').filter({ hasText: 'Rate limit plan unused has been deleted' }).waitFor();
  expect((await plan('unused')).status).toBe(404);
  await rowWith(page, 'unused').waitFor({ state: 'detached' });
});

it('says how many keys hold a plan before deleting it, and unbinds them as it deletes it', async () => {
  expect(
    (await tollgate.admin('POST', '/rate-limit/create', { rateLimitId: 'busy', limit: 5, period: 'day' }))
      .status,
  ).toBe(201);
  const keys = await Promise.all(
    ['busy-1', 'busy-2'].map(
      async (name) =>
        (await tollgate.admin('POST', '/consumer-api-key/create', { name, rateLimitId: 'busy' })).body,
    ),
  );
  const { page } = tab.session;
  await visit(tab.session, 'plans', 'Plans');
  await rowWith(page, 'busy').getByRole('button', { name: 'Delete busy' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete the plan busy?' });
  // The dialog says up front how many keys hold the plan, and what deleting it does to them.
  await dialog.getByText('2 keys hold this plan. Deleting it unbinds its keys first').waitFor();
  expect(await dialog.innerText()).not.toMatch(/force|key\(s\)/);
  await dialog.getByRole('button', { name: 'Unbind 2 keys and delete' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: 'Rate limit plan busy has been deleted (unbound from 2 key(s))' })
    .waitFor();
  expect((await plan('busy')).status).toBe(404);
  for (const key of keys)
    expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.rateLimitId).toBeNull();
});

it('asks again, with the count, when keys were bound to a plan after the list was read', async () => {
  expect(
    (await tollgate.admin('POST', '/rate-limit/create', { rateLimitId: 'late', limit: 5, period: 'day' }))
      .status,
  ).toBe(201);
  const { page } = tab.session;
  await visit(tab.session, 'plans', 'Plans');
  await rowWith(page, 'late').getByRole('button', { name: 'Delete late' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete the plan late?' });
  await dialog.getByText('No key holds this plan.').waitFor();
  const key = (
    await tollgate.admin('POST', '/consumer-api-key/create', { name: 'late-key', rateLimitId: 'late' })
  ).body;
  await dialog.getByRole('button', { name: 'Delete plan' }).click();
  await dialog
    .getByRole('alert')
    .filter({ hasText: '1 key holds this plan now: deleting it unbinds its keys first.' })
    .waitFor();
  expect((await plan('late')).status).toBe(200);
  await dialog.getByRole('button', { name: 'Unbind 1 key and delete' }).click();
  await page.getByRole('status').filter({ hasText: 'Rate limit plan late has been deleted' }).waitFor();
  expect((await plan('late')).status).toBe(404);
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.rateLimitId).toBeNull();
});

it('says the plan is created when a new one is saved', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'plans/new', 'Create a plan');
  await page.getByLabel('Plan id').fill('announced');
  await page.getByRole('button', { name: 'Create plan' }).click();
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'The plan announced is created.' }).waitFor();
  expect((await plan('announced')).status).toBe(200);
});

it('lists plans 50 at a time', async () => {
  const before = (await tollgate.admin('GET', '/rate-limit?limit=1000')).body.rateLimits.length as number;
  for (let i = before; i < 60; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, 60 - i) }, (_, j) =>
        tollgate.admin('POST', '/rate-limit/create', { rateLimitId: `p-${i + j}`, limit: 1, period: 'day' }),
      ),
    );
  }
  const all = (
    (await tollgate.admin('GET', '/rate-limit?limit=1000')).body.rateLimits as { rateLimitId: string }[]
  ).map((p) => p.rateLimitId);
  expect(all.length).toBeGreaterThanOrEqual(60);
  const { page } = tab.session;
  await visit(tab.session, 'plans', 'Plans');
  const ids = () =>
    page
      .locator('tbody tr[data-plan-id]')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-plan-id')));
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-plan-id]').length === 50);
  expect(await ids()).toEqual(all.slice(0, 50));
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.getByText('Page 2', { exact: true }).waitFor();
  await page.waitForFunction(
    (n) => document.querySelectorAll('tbody tr[data-plan-id]').length === n,
    all.length - 50,
  );
  expect(await ids()).toEqual(all.slice(50));
  expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
});

it('creates a plan of several limits (a named burst limit, a sliding daily quota), sent as `limits`', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'plans/new', 'Create a plan');
  await page.getByLabel('Plan id').fill('metered');
  await page.getByLabel('Description').fill('Burst and quota');
  const first = page.getByRole('group', { name: 'Limit 1' });
  await first.getByLabel('Requests').fill('10');
  await first.getByLabel('Per').selectOption('minute');
  await first.getByLabel('Name (optional)').fill('burst');
  await page.getByRole('button', { name: 'Add a limit' }).click();
  const second = page.getByRole('group', { name: 'Limit 2' });
  await second.getByLabel('Requests').fill('10000');
  await second.getByLabel('Per').selectOption('day');
  await second.getByLabel('Window').selectOption('sliding');
  await page.getByRole('button', { name: 'Add a limit' }).click();
  const third = page.getByRole('group', { name: 'Limit 3' });
  // Every period the API takes is offered, the year included.
  expect(await third.getByLabel('Per').locator('option').allInnerTexts()).toEqual([
    'second',
    'minute',
    'hour',
    'day',
    'week',
    'month',
    'year',
  ]);
  await third.getByLabel('Requests').fill('1000000');
  await third.getByLabel('Per').selectOption('year');
  await page.getByRole('button', { name: 'Add a limit' }).click();
  // Four limits at most: no fifth.
  expect(await page.getByRole('button', { name: 'Add a limit' }).count()).toBe(0);
  await page.getByRole('button', { name: 'Remove limit 4' }).click();

  const sent = nextBody(tab.session, 'POST', '/rate-limit/create');
  await page.getByRole('button', { name: 'Create plan' }).click();
  expect(await sent).toEqual({
    rateLimitId: 'metered',
    description: 'Burst and quota',
    limits: [
      { name: 'burst', limit: 10, period: 'minute' },
      { limit: 10000, period: 'day', algorithm: 'sliding' },
      { limit: 1000000, period: 'year' },
    ],
  });
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  expect((await plan('metered')).body.limits).toEqual([
    { name: 'burst', limit: 10, period: 'minute', algorithm: 'fixed', per: 'key' },
    { name: 'day', limit: 10000, period: 'day', algorithm: 'sliding', per: 'key' },
    { name: 'year', limit: 1000000, period: 'year', algorithm: 'fixed', per: 'key' },
  ]);
  // Oldest first: the new plan is on the last page. Each page is read once loaded: until then its
  // pager waits (the next cursor on screen is still the previous page's).
  const loaded = page.locator('nav[aria-label="Plans pages"][aria-busy="false"]');
  await loaded.waitFor();
  for (let n = 2; await page.getByRole('button', { name: 'Next page' }).isEnabled(); n++) {
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText(`Page ${n}`, { exact: true }).waitFor();
    await loaded.waitFor();
  }
  expect(await rowWith(page, 'metered').locator('li').allInnerTexts()).toEqual([
    'burst: 10 per minute',
    '10,000 per day, sliding',
    '1,000,000 per year',
  ]);
});

it('creates a plan of a token bucket and a concurrency limit per customer, and edits the bucket keeping its burst', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'plans/new', 'Create a plan');
  await page.getByLabel('Plan id').fill('gpu');
  const first = page.getByRole('group', { name: 'Limit 1' });
  await first.getByLabel('Window').selectOption('tokenBucket');
  // A bucket refills per second, minute, hour or day.
  expect(await first.getByLabel('Per').locator('option').allInnerTexts()).toEqual([
    'second',
    'minute',
    'hour',
    'day',
  ]);
  await first.getByLabel('Requests').fill('1');
  await first.getByLabel('Per').selectOption('second');
  await first.getByLabel('Burst (optional)').fill('20');
  await page.getByRole('button', { name: 'Add a limit' }).click();
  const second = page.getByRole('group', { name: 'Limit 2' });
  await second.getByLabel('Window').selectOption('concurrency');
  // No period for requests in flight.
  expect(await second.getByLabel('Per').count()).toBe(0);
  await second.getByLabel('Requests in flight').fill('4');
  // Requests in flight counted for each customer apart.
  await second.getByLabel('Counted for').selectOption('customer');
  const sent = nextBody(tab.session, 'POST', '/rate-limit/create');
  await page.getByRole('button', { name: 'Create plan' }).click();
  expect(await sent).toEqual({
    rateLimitId: 'gpu',
    description: '',
    limits: [
      { limit: 1, period: 'second', algorithm: 'tokenBucket', burst: 20 },
      { limit: 4, period: null, algorithm: 'concurrency', per: 'customer' },
    ],
  });
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  expect((await plan('gpu')).body.limits).toEqual([
    { name: 'second', limit: 1, period: 'second', algorithm: 'tokenBucket', burst: 20, per: 'key' },
    { name: 'concurrency', limit: 4, period: null, algorithm: 'concurrency', per: 'customer' },
  ]);
  await visit(tab.session, 'plans/gpu/edit', 'Edit the plan gpu');
  const bucket = page.getByRole('group', { name: 'Limit 1' });
  expect(await bucket.getByLabel('Burst (optional)').inputValue()).toBe('20');
  expect(await page.getByRole('group', { name: 'Limit 2' }).getByLabel('Counted for').inputValue()).toBe(
    'customer',
  );
  await bucket.getByLabel('Requests').fill('2');
  const patched = nextBody(tab.session, 'PATCH', '/rate-limit/gpu');
  await page.getByRole('button', { name: 'Save plan' }).click();
  expect(await patched).toMatchObject({
    limits: [
      { limit: 2, period: 'second', algorithm: 'tokenBucket', burst: 20 },
      { limit: 4, period: null, algorithm: 'concurrency', per: 'customer' },
    ],
  });
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  expect((await plan('gpu')).body.limits[0]).toEqual({
    name: 'second',
    limit: 2,
    period: 'second',
    algorithm: 'tokenBucket',
    burst: 20,
    per: 'key',
  });
});

it('edits a plan of several limits down to one, and a single sliding limit to fixed, both sent as `limits`', async () => {
  const created = await tollgate.admin('POST', '/rate-limit/create', {
    rateLimitId: 'two-limits',
    limits: [
      { name: 'burst', limit: 5, period: 'second' },
      { limit: 100, period: 'hour' },
    ],
  });
  expect(created.status).toBe(201);
  const { page } = tab.session;
  await visit(tab.session, 'plans/two-limits/edit', 'Edit the plan two-limits');
  expect(await page.getByRole('group', { name: 'Limit 1' }).getByLabel('Name (optional)').inputValue()).toBe(
    'burst',
  );
  // The second limit carries its default name (its period): the form shows it unnamed.
  expect(await page.getByRole('group', { name: 'Limit 2' }).getByLabel('Name (optional)').inputValue()).toBe(
    '',
  );
  await page.getByRole('button', { name: 'Remove limit 1' }).click();
  const sent = nextBody(tab.session, 'PATCH', '/rate-limit/two-limits');
  await page.getByRole('button', { name: 'Save plan' }).click();
  expect(await sent).toEqual({ description: '', limits: [{ limit: 100, period: 'hour' }] });
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  expect((await plan('two-limits')).body).toMatchObject({
    limit: 100,
    period: 'hour',
    limits: [{ name: 'hour', limit: 100, period: 'hour', algorithm: 'fixed' }],
  });

  expect(
    (
      await tollgate.admin('POST', '/rate-limit/create', {
        rateLimitId: 'slides',
        limits: [{ limit: 7, period: 'hour', algorithm: 'sliding' }],
      })
    ).status,
  ).toBe(201);
  await visit(tab.session, 'plans/slides/edit', 'Edit the plan slides');
  expect(await page.getByLabel('Window').inputValue()).toBe('sliding');
  await page.getByLabel('Window').selectOption('fixed');
  const patched = nextBody(tab.session, 'PATCH', '/rate-limit/slides');
  await page.getByRole('button', { name: 'Save plan' }).click();
  expect(await patched).toEqual({ description: '', limits: [{ limit: 7, period: 'hour' }] });
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  expect((await plan('slides')).body.limits).toEqual([
    { name: 'hour', limit: 7, period: 'hour', algorithm: 'fixed', per: 'key' },
  ]);
});

it('says in plain words, once, which limit the API refused and why', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'plans/new', 'Create a plan');
  await page.getByLabel('Plan id').fill('twice');
  await page.getByRole('group', { name: 'Limit 1' }).getByLabel('Name (optional)').fill('same');
  await page.getByRole('button', { name: 'Add a limit' }).click();
  await page.getByRole('group', { name: 'Limit 2' }).getByLabel('Name (optional)').fill('same');
  await page.getByRole('button', { name: 'Create plan' }).click();
  const refused = await tollgate.admin('POST', '/rate-limit/create', {
    rateLimitId: 'twice',
    limits: [
      { name: 'same', limit: 100, period: 'minute' },
      { name: 'same', limit: 10000, period: 'day' },
    ],
  });
  expect(refused.status).toBe(400);
  expect(refused.body.details).toEqual([{ field: 'limits.1.name', message: 'repeats the name "same"' }]);
  // Said once, in the form's words: the limit as the form numbers it, not the API's field path.
  const alert = page.getByRole('alert');
  await alert.getByText('Some values need a change:').waitFor();
  expect(await alert.getByRole('listitem').allInnerTexts()).toEqual([
    'Limit 2, name: “same” is the name of another limit too: give each limit its own.',
  ]);
  expect(await alert.innerText()).not.toContain('limits.1');
  expect(await alert.innerText()).not.toContain(refused.body.error);
  expect((await plan('twice')).status).toBe(404);
});

it('creates a plan whose limit counts only some requests and whose costs price them, then edits its costs', async () => {
  // Route ids are checked when a plan is written: the route exists first.
  expect(
    (
      await tollgate.admin('POST', '/tollgate/routes', {
        routeId: 'search',
        match: { pathPrefix: '/search' },
        upstreamUrl: 'http://127.0.0.1:9',
      })
    ).status,
  ).toBe(201);
  const { page } = tab.session;
  await visit(tab.session, 'plans/new', 'Create a plan');
  await page.getByLabel('Plan id').fill('priced');
  await page.getByLabel('Requests').fill('1000');
  await page.getByLabel('Per', { exact: true }).selectOption('day');
  await page.getByRole('button', { name: 'Add a limit' }).click();
  const second = page.getByRole('group', { name: 'Limit 2' });
  await second.getByLabel('Requests').fill('10');
  await second.getByLabel('Per', { exact: true }).selectOption('minute');
  await second.getByText('Counts only some requests').click();
  await second.getByLabel('Routes (ids)').fill('search');
  await second.getByRole('group', { name: 'Methods' }).getByLabel('GET', { exact: true }).check();
  await page.getByRole('button', { name: 'Add a cost' }).click();
  const cost = page.getByRole('group', { name: 'Cost 1' });
  await cost.getByLabel('Units per request').fill('5');
  await cost.getByLabel('Path prefix').fill('/v1/reports');
  await cost.getByLabel('Ignore case').check();
  await cost.getByRole('group', { name: 'Methods' }).getByLabel('POST', { exact: true }).check();
  const sent = nextBody(tab.session, 'POST', '/rate-limit/create');
  await page.getByRole('button', { name: 'Create plan' }).click();
  const expected = {
    limits: [
      { limit: 1000, period: 'day' },
      { limit: 10, period: 'minute', match: { routeIds: ['search'], methods: ['GET'] } },
    ],
    costs: [{ cost: 5, match: { methods: ['POST'], pathPrefix: '/v1/reports', caseInsensitive: true } }],
  };
  expect(await sent).toEqual({ rateLimitId: 'priced', description: '', ...expected });
  await page.getByRole('heading', { level: 1, name: 'Plans' }).waitFor();
  expect((await plan('priced')).body).toMatchObject({
    limits: [
      { limit: 1000, period: 'day', name: 'day', algorithm: 'fixed' },
      { limit: 10, period: 'minute', name: 'minute', match: { routeIds: ['search'], methods: ['GET'] } },
    ],
    costs: expected.costs,
  });
  // Oldest first: the plans the tests before made come first.
  const loaded = page.locator('nav[aria-label="Plans pages"][aria-busy="false"]');
  await loaded.waitFor();
  for (let n = 2; (await rowWith(page, 'priced').count()) === 0; n++) {
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText(`Page ${n}`, { exact: true }).waitFor();
    await loaded.waitFor();
  }
  expect(
    await rowWith(page, 'priced').getByRole('cell').nth(1).getByRole('listitem').allInnerTexts(),
  ).toEqual([
    '1,000 per day',
    '10 per minute (only route search; GET)',
    'costs 5 for POST; under /v1/reports (any case)',
  ]);

  // Editing shows the matches and costs as saved; a cost without a condition is refused in the form's words.
  await rowWith(page, 'priced').getByRole('link', { name: 'Edit priced' }).click();
  await page.getByRole('heading', { level: 1, name: 'Edit the plan priced' }).waitFor();
  expect(await page.getByRole('group', { name: 'Limit 2' }).getByLabel('Routes (ids)').inputValue()).toBe(
    'search',
  );
  const first = page.getByRole('group', { name: 'Cost 1' });
  expect(await first.getByLabel('Path prefix').inputValue()).toBe('/v1/reports');
  expect(await first.getByLabel('Ignore case').isChecked()).toBe(true);
  await first.getByLabel('Units per request').fill('7');
  await page.getByRole('button', { name: 'Add a cost' }).click();
  await page.getByRole('group', { name: 'Cost 2' }).getByLabel('Units per request').fill('2');
  await page.getByRole('button', { name: 'Save plan' }).click();
  await page
    .getByRole('alert')
    .getByText('Cost 2, match: needs at least one condition: routes, methods or a path prefix.')
    .waitFor();
  await page.getByRole('button', { name: 'Remove cost 2' }).click();
  const edited = nextBody(tab.session, 'PATCH', '/rate-limit/priced');
  await page.getByRole('button', { name: 'Save plan' }).click();
  expect(await edited).toMatchObject({
    costs: [{ cost: 7, match: { methods: ['POST'], pathPrefix: '/v1/reports', caseInsensitive: true } }],
  });
  await page.getByRole('status').filter({ hasText: 'The plan priced is saved.' }).waitFor();
  expect((await plan('priced')).body.costs).toEqual([
    { cost: 7, match: { methods: ['POST'], pathPrefix: '/v1/reports', caseInsensitive: true } },
  ]);
});

it('names the route a limit names that no route has, in the form’s words', async () => {
  const { page } = tab.session;
  await visit(tab.session, 'plans/new', 'Create a plan');
  await page.getByLabel('Plan id').fill('unrouted');
  await page.getByRole('button', { name: 'Add a limit' }).click();
  const second = page.getByRole('group', { name: 'Limit 2' });
  await second.getByLabel('Requests').fill('10');
  await second.getByText('Counts only some requests').click();
  await second.getByLabel('Routes (ids)').fill('no-such-route');
  await page.getByRole('button', { name: 'Create plan' }).click();
  const alert = page.getByRole('alert');
  await alert.getByText('Some values need a change:').waitFor();
  expect(await alert.getByRole('listitem').allInnerTexts()).toEqual([
    'Limit 2, routes: no route has the id “no-such-route”: choose one of the routes offered.',
  ]);
  expect((await plan('unrouted')).status).toBe(404);
});
