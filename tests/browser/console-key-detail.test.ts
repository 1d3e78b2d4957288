/**
 * One key in the console, in Chromium against a built Tollgate with a real backend: its usage over time
 * (chart, granularity and range switches, endpoints and customers), its plan's limits and what is left,
 * and every action an administrator takes on it, each checked through the management API and, where it
 * shows there, through the proxy.
 */
import type { Locator } from 'playwright-core';
import { waitFor } from '../helpers/poll.js';
import { hit } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import {
  clipboardText,
  consoleSuite,
  downloadedText,
  signedInTab,
  visit,
  type ConsoleSession,
} from './helpers/console-browser.js';

let tollgate: Tollgate;

interface Bucket {
  requests: number;
  successful: number;
  failed: number;
  rateLimited: number;
}
const sum = (buckets: Bucket[], field: keyof Bucket) => buckets.reduce((s, b) => s + b[field], 0);

const suite = consoleSuite(async (started) => {
  tollgate = started;
  for (const plan of [
    { rateLimitId: 'two-a-day', description: 'Trial', limit: 2, period: 'day' },
    { rateLimitId: 'gold', limit: 1000, period: 'day' },
  ]) {
    expect((await tollgate.admin('POST', '/rate-limit/create', plan)).status).toBe(201);
  }
});
const tab = signedInTab(suite, () => tollgate.rootToken);

async function newKey(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const created = await tollgate.admin('POST', '/consumer-api-key/create', body);
  expect(created.status).toBe(201);
  return created.body;
}

const keyDetail = async (id: string) => (await tollgate.admin('GET', `/consumer-api-key/${id}`)).body;

/**
 * Waits until the fleet's usage, which reads only what is stored, lists the key with `requests` among
 * its ten busiest since `since` (an ISO time just before them: few keys had requests since that
 * minute). Before that, a read made while this process hands the key's usage to Redis (once a second)
 * leaves it out for that moment, shown late rather than twice (src/usage/recorder.ts), and a page
 * keeps what it read; once stored, every read counts it.
 */
async function untilStored(keyId: string, requests: number, since: string): Promise<void> {
  const { value: top } = await waitFor(
    async () =>
      (await tollgate.admin('GET', `/tollgate/usage?granularity=minute&from=${since}`)).body.topKeys as {
        consumerApiKeyId: string;
        requests: number;
      }[],
    (keys) => keys.some((k) => k.consumerApiKeyId === keyId && k.requests === requests),
    { timeoutMs: 20_000 },
  );
  expect(top).toContainEqual(expect.objectContaining({ consumerApiKeyId: keyId, requests }));
}

/** Waits for the text of the key page's status line (announced to screen readers). */
const announced = (s: ConsoleSession, text: string | RegExp) =>
  s.page.locator('p.status-message').filter({ hasText: text }).waitFor();

it('charts the key’s requests, 429s and errors over time, with endpoints and customers, as the usage API counts them', async () => {
  const key = await newKey({ name: 'checkout', rateLimitId: 'two-a-day' });
  const since = new Date().toISOString();
  expect(await hit(tollgate, key.secret, '/v1/status/500', { 'x-customer-id': 'beta' })).toBe(500);
  expect(await hit(tollgate, key.secret, '/v1/orders', { 'x-customer-id': 'acme' })).toBe(200);
  expect(await hit(tollgate, key.secret, '/v1/orders', { 'x-customer-id': 'acme' })).toBe(429);
  expect(await hit(tollgate, key.secret, '/v1/orders')).toBe(429);
  const { value: shown } = await waitFor(
    () => keyDetail(key.id),
    (d) => d.usage.totalRequests === 4,
    { timeoutMs: 10_000 },
  );
  expect(shown.usage.totalRequests).toBe(4);
  await untilStored(key.id, 4, since);

  const { page } = tab.session;
  await visit(tab.session, `keys/${key.id}`, 'checkout');
  const legend = page.getByRole('list', { name: 'Series' });
  await legend.getByRole('button', { name: 'Requests: 4' }).waitFor();
  const hourly = (await tollgate.admin('GET', `/consumer-api-key/${key.id}/usage?granularity=hour`)).body;
  expect([
    sum(hourly.buckets, 'requests'),
    sum(hourly.buckets, 'rateLimited'),
    sum(hourly.buckets, 'failed') - sum(hourly.buckets, 'rateLimited'),
  ]).toEqual([4, 2, 1]);
  expect(await legend.getByRole('button').allInnerTexts()).toEqual(['Requests: 4', '429s: 2', 'Errors: 1']);
  expect(
    await page
      .getByRole('img', { name: /^This key, 24 hours, per hour: 4 requests, 2 429s, 1 errors$/ })
      .count(),
  ).toBe(1);
  // The canvas is drawn by uPlot (in an effect, after the chart's frame is on screen).
  await page.locator('.chart-canvas canvas').first().waitFor();

  // The same figures as a table, one row per bucket the API returned.
  await page.getByRole('button', { name: 'Show the data as a table' }).click();
  const dataRows = page.locator('figure.chart table tbody tr');
  await dataRows.first().waitFor();
  expect(await dataRows.count()).toBe(hourly.buckets.length);
  await page.getByRole('button', { name: 'Hide the data table' }).click();

  // Granularity switch: the chart is asked again per minute.
  await page.getByLabel('Granularity').selectOption('minute');
  await page.getByText('This key, 24 hours, per minute', { exact: true }).waitFor();
  expect(
    tab.session.requests.some(
      (u) =>
        u.includes(`/consumer-api-key/${key.id}/usage?`) &&
        new URL(u).searchParams.get('granularity') === 'minute',
    ),
  ).toBe(true);
  await legend.getByRole('button', { name: 'Requests: 4' }).waitFor();
  // Range presets: 7 days per hour, then the last hour per minute.
  await page.getByRole('group', { name: 'Range' }).getByRole('button', { name: '7 days' }).click();
  await page.getByText('This key, 7 days, per hour', { exact: true }).waitFor();
  await page.getByRole('group', { name: 'Range' }).getByRole('button', { name: 'Last hour' }).click();
  await page.getByText('This key, last hour, per minute', { exact: true }).waitFor();
  expect(
    await page
      .getByRole('group', { name: 'Range' })
      .getByRole('button', { name: 'Last hour' })
      .getAttribute('aria-pressed'),
  ).toBe('true');
  await legend.getByRole('button', { name: 'Requests: 4' }).waitFor();
  // A series can be hidden and shown from the keyboard.
  const errorsToggle = legend.getByRole('button', { name: /^Errors/ });
  await errorsToggle.focus();
  await page.keyboard.press('Enter');
  await legend.locator('button[aria-pressed="false"]', { hasText: 'Errors' }).waitFor();

  // Endpoints and customers over the range, from the API's day series.
  // Read until it holds the four requests: a batch being written as it is read can be missed for that moment.
  const { value: byEndpoint } = await waitFor(
    async () =>
      (await tollgate.admin('GET', `/consumer-api-key/${key.id}/usage?granularity=day&groupBy=endpoint`))
        .body,
    (b) => (b.series as { buckets: Bucket[] }[]).reduce((n, x) => n + sum(x.buckets, 'requests'), 0) === 4,
  );
  // Within its table: the failed requests below list paths and customers too.
  const endpoints = page.getByRole('region', { name: 'Endpoints' });
  const rowIn = (table: Locator, text: string) => table.getByRole('row').filter({ hasText: text });
  for (const series of byEndpoint.series as { endpoint: string; buckets: Bucket[] }[]) {
    await rowIn(endpoints, series.endpoint).waitFor();
    const cells = await rowIn(endpoints, series.endpoint).getByRole('cell').allInnerTexts();
    expect(cells.slice(0, 4)).toEqual([
      series.endpoint,
      ...(['requests', 'successful', 'failed'] as const).map((f) => String(sum(series.buckets, f))),
    ]);
  }
  expect((byEndpoint.series as unknown[]).length).toBe(2);
  const customers = page.getByRole('region', { name: 'Customers' });
  await customers.getByRole('row').nth(2).waitFor();
  expect(await rowIn(customers, 'acme').getByRole('cell').allInnerTexts()).toEqual(['acme', '2', '1', '1']);
  expect(await rowIn(customers, 'beta').getByRole('cell').allInnerTexts()).toEqual(['beta', '1', '0', '1']);
  expect(await customers.getByRole('row').count()).toBe(3);
});

it("shows the plan's limits and what is left of them, as the key detail reports", async () => {
  const key = await newKey({ name: 'limited', rateLimitId: 'two-a-day' });
  expect(await hit(tollgate, key.secret)).toBe(200);
  const before = await keyDetail(key.id);
  await visit(tab.session, `keys/${key.id}`, 'limited');
  const limits = tab.session.page.getByRole('region', { name: 'Limits' });
  await limits.getByText('Plan two-a-day: Trial').waitFor();
  const cells = await limits.getByRole('row').nth(1).getByRole('cell').allInnerTexts();
  const after = await keyDetail(key.id);
  // Read between two API reads, the page agrees with one of them (a window may end in between).
  const expected = (d: typeof before) => [
    'day',
    '2',
    'day',
    String(d.usage.rateLimits.remaining),
    d.usage.rateLimits.resetTime.replace('T', ' ').replace('Z', ' UTC'),
  ];
  expect([expected(before), expected(after)]).toContainEqual(cells);
  expect(await limits.getByRole('meter').getAttribute('aria-label')).toMatch(/^day: \d of 2 left$/);

  // Unbound with no DEFAULT_RATE_LIMIT: nothing limits the key, and the page says so.
  expect(
    (await tollgate.admin('POST', '/api-keys/remove-rate-limit', { consumerApiKeyId: key.id })).status,
  ).toBe(200);
  await tab.session.page.reload();
  await limits
    .getByText('No plan is bound and no default limit is set: requests are counted, not limited.')
    .waitFor();
});

it('shows every limit of a plan of several limits, and what is left of each, as the key detail reports', async () => {
  const created = await tollgate.admin('POST', '/rate-limit/create', {
    rateLimitId: 'layered',
    description: 'Burst and quota',
    limits: [
      { name: 'burst', limit: 3, period: 'minute' },
      { name: 'quota', limit: 50, period: 'day', algorithm: 'sliding' },
    ],
  });
  expect(created.status).toBe(201);
  const key = await newKey({ name: 'layered-key', rateLimitId: 'layered' });
  for (let i = 0; i < 2; i++) expect(await hit(tollgate, key.secret)).toBe(200);
  const before = await keyDetail(key.id);
  await visit(tab.session, `keys/${key.id}`, 'layered-key');
  const limits = tab.session.page.getByRole('region', { name: 'Limits' });
  await limits.getByText('Plan layered: Burst and quota').waitFor();
  await limits.getByRole('cell', { name: 'day (sliding)' }).waitFor();
  const rows = await limits
    .getByRole('row')
    .evaluateAll((trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText)));
  const after = await keyDetail(key.id);
  const expected = (d: typeof before) =>
    (
      d.usage.rateLimits.limits as {
        name: string;
        limit: number;
        period: string;
        remaining: number;
        resetTime: string;
      }[]
    ).map((l) => [
      l.name,
      String(l.limit),
      l.period === 'day' ? 'day (sliding)' : l.period,
      String(l.remaining),
      l.resetTime.replace('T', ' ').replace('Z', ' UTC'),
    ]);
  expect(expected(before).map((r) => r[0])).toEqual(['burst', 'quota']);
  expect([expected(before), expected(after)]).toContainEqual(rows);
  expect(await limits.getByRole('meter').count()).toBe(2);
});

it('disables and enables the key', async () => {
  const key = await newKey({ name: 'toggle-me' });
  await visit(tab.session, `keys/${key.id}`, 'toggle-me');
  const { page } = tab.session;
  await page.getByRole('button', { name: 'Disable', exact: true }).click();
  await announced(tab.session, 'The key is disabled');
  expect((await keyDetail(key.id)).enabled).toBe(false);
  expect(await hit(tollgate, key.secret)).toBe(403);
  await page
    .getByRole('heading', { level: 1, name: 'toggle-me' })
    .locator('..')
    .getByText('Disabled')
    .waitFor();
  await page.getByRole('button', { name: 'Enable', exact: true }).click();
  await announced(tab.session, 'The key is enabled.');
  expect((await keyDetail(key.id)).enabled).toBe(true);
  expect(await hit(tollgate, key.secret)).toBe(200);
});

it('rolls the secret with a grace preset, shows the new one once with a copy button, and a second roll ends the grace', async () => {
  const key = await newKey({ name: 'rolling' });
  await visit(tab.session, `keys/${key.id}`, 'rolling');
  const { page } = tab.session;
  await page.getByRole('button', { name: 'Roll secret…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Roll the secret' });
  await dialog.getByLabel('1 hour').check();
  const started = Date.now();
  await dialog.getByRole('button', { name: 'Roll secret' }).click();
  const field = dialog.getByLabel('New secret (copy it now)');
  const rolled = await field.inputValue();
  expect(rolled).toMatch(/^tg_/);
  expect(rolled).not.toBe(key.secret);
  await dialog.getByRole('button', { name: 'Copy' }).click();
  await dialog.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
  expect(await clipboardText(page)).toBe(rolled);
  const until = /keeps working until (\S+ \S+) UTC/.exec(await dialog.innerText())![1]!;
  const untilMs = Date.parse(until.replace(' ', 'T') + 'Z');
  expect(untilMs).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000 + 3_600_000 - 1_000);
  // The grace ends on the first whole second at least an hour after the roll.
  expect(untilMs).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1_000);
  expect((await keyDetail(key.id)).secret).toBe(rolled);
  expect(await hit(tollgate, rolled)).toBe(200);
  expect(await hit(tollgate, key.secret)).toBe(200);
  await dialog.getByRole('button', { name: 'Done' }).click();
  await dialog.waitFor({ state: 'detached' });
  // The page keeps saying until when the previous secret works once the dialog is gone.
  await announced(
    tab.session,
    `The secret was rolled. The previous secret keeps working until ${until} UTC.`,
  );
  // And after a reload, from the key itself, as the API answers it.
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'rolling' }).waitFor();
  const details = page.getByRole('region', { name: 'Details' });
  // The grace ends up to a second past an hour after the roll, so a quick reload may still read "in 1 h".
  await details
    .getByText(new RegExp(`^works until ${until} UTC \\(in (5\\d min|1 h)\\), the grace of the last roll$`))
    .waitFor();
  expect((await keyDetail(key.id)).previousSecretExpiresAt).toBe(until.replace(' ', 'T') + 'Z');

  await page.getByRole('button', { name: 'Roll secret…' }).click();
  await dialog.getByLabel('None: the previous secret stops working at once').check();
  await dialog.getByRole('button', { name: 'Roll secret' }).click();
  await dialog.getByText('The previous secret no longer works.').waitFor();
  const again = await dialog.getByLabel('New secret (copy it now)').inputValue();
  expect((await keyDetail(key.id)).secret).toBe(again);
  expect(await hit(tollgate, again)).toBe(200);
  expect(await hit(tollgate, rolled)).toBe(401);
  expect(await hit(tollgate, key.secret)).toBe(401);
});

it('sets and removes the expiry', async () => {
  const key = await newKey({ name: 'expiring' });
  await visit(tab.session, `keys/${key.id}`, 'expiring');
  const { page } = tab.session;
  await page.getByRole('button', { name: 'Expiry…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Expiry' });
  await dialog.getByLabel('Expires at (UTC)').fill('2099-05-06T07:08:09');
  await dialog.getByRole('button', { name: 'Set expiry' }).click();
  await announced(tab.session, 'The key expires at 2099-05-06 07:08:09 UTC.');
  expect((await keyDetail(key.id)).expiresAt).toBe('2099-05-06T07:08:09Z');

  // An instant already past is warned about before anything is sent, and sent only once confirmed:
  // then the key is refused at once, and shows as expired.
  await page.getByRole('button', { name: 'Expiry…' }).click();
  await dialog.getByLabel('Expires at (UTC)').fill('2001-01-01T00:00:00');
  await dialog.getByRole('alert').filter({ hasText: 'This instant is already past' }).waitFor();
  const patches: string[] = [];
  page.on('request', (r) => {
    if (r.method() === 'PATCH') patches.push(r.url());
  });
  await dialog.getByRole('button', { name: 'Set expiry' }).click();
  await dialog.getByLabel('Expire the key at once').waitFor();
  expect(await dialog.getByLabel('Expire the key at once').evaluate((box) => box.matches(':invalid'))).toBe(
    true,
  );
  expect(patches).toEqual([]);
  expect((await keyDetail(key.id)).expiresAt).toBe('2099-05-06T07:08:09Z');
  await dialog.getByLabel('Expire the key at once').check();
  await dialog.getByRole('button', { name: 'Set expiry' }).click();
  await announced(tab.session, 'The key expires at 2001-01-01 00:00:00 UTC.');
  expect(patches).toHaveLength(1);
  expect(await hit(tollgate, key.secret)).toBe(401);
  await page
    .getByRole('heading', { level: 1, name: 'expiring' })
    .locator('..')
    .getByText('Expired')
    .waitFor();

  await page.getByRole('button', { name: 'Expiry…' }).click();
  await dialog.getByRole('button', { name: 'Remove expiry' }).click();
  await announced(tab.session, 'The key no longer expires.');
  expect((await keyDetail(key.id)).expiresAt).toBeNull();
  expect(await hit(tollgate, key.secret)).toBe(200);
});

it("binds and unbinds a plan, and shows the API's message for a plan that does not exist", async () => {
  const key = await newKey({ name: 'planned' });
  await visit(tab.session, `keys/${key.id}`, 'planned');
  const { page } = tab.session;
  const dialog = page.getByRole('dialog', { name: 'Plan' });
  await page.getByRole('button', { name: 'Plan…' }).click();
  await dialog.getByLabel('Plan').fill('no-such-plan');
  await dialog.getByRole('button', { name: 'Bind plan' }).click();
  const refused = await tollgate.admin('POST', '/api-keys/apply-rate-limit', {
    consumerApiKeyId: key.id,
    rateLimitId: 'no-such-plan',
  });
  expect(refused.status).toBe(404);
  await dialog.getByRole('alert').filter({ hasText: refused.body.error }).waitFor();

  await dialog.getByLabel('Plan').fill('gold');
  await dialog.getByRole('button', { name: 'Bind plan' }).click();
  await announced(tab.session, 'Plan gold is bound to the key.');
  expect((await keyDetail(key.id)).rateLimitId).toBe('gold');
  await page.getByRole('region', { name: 'Limits' }).getByRole('link', { name: 'gold' }).waitFor();

  await page.getByRole('button', { name: 'Plan…' }).click();
  await dialog.getByRole('button', { name: 'Unbind plan' }).click();
  await announced(tab.session, 'The key has no plan now.');
  expect((await keyDetail(key.id)).rateLimitId).toBeNull();
});

it('opens its destructive dialogs (delete, roll) with the focus on Cancel: Enter, Enter changes nothing', async () => {
  const key = await newKey({ name: 'keep-me' });
  await visit(tab.session, `keys/${key.id}`, 'keep-me');
  const { page } = tab.session;
  const focusBackOn = (opener: string) =>
    page.waitForFunction((name) => document.activeElement?.textContent === name, opener);
  for (const [opener, title] of [
    ['Delete…', 'Delete keep-me?'],
    ['Roll secret…', 'Roll the secret'],
  ] as const) {
    await page.getByRole('button', { name: opener }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: title }).waitFor();
    await page.waitForFunction(() => document.activeElement?.closest('dialog') !== null);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    // Enter on Cancel closes the dialog and gives the focus back to its opener; Enter opens it again.
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await focusBackOn(opener);
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: title }).waitFor();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    // The focus returns in an effect after the dialog goes: the next opener is focused only after it.
    await focusBackOn(opener);
  }
  const after = await tollgate.admin('GET', `/consumer-api-key/${key.id}`);
  expect(after.status).toBe(200);
  expect(after.body.secret).toBe(key.secret);
  expect(await hit(tollgate, key.secret)).toBe(200);
});

it('labels the time axis of its chart in UTC, 24-hour and ISO order, as the console writes every time', async () => {
  const key = await newKey({ name: 'axis' });
  const { page, context } = tab.session;
  // uPlot draws its labels on a canvas: every text drawn is recorded as it is drawn, from each new document on.
  await context.addInitScript(() => {
    const drawn: string[] = [];
    const cut: string[] = [];
    Object.assign(window, { drawnTexts: drawn, cutTexts: cut });
    const fillText = CanvasRenderingContext2D.prototype.fillText;
    CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
      drawn.push(String(text));
      // A text centred on x (as a time label is) that reaches past the canvas's edge is clipped.
      const half = this.measureText(String(text)).width / 2;
      if (this.textAlign === 'center' && (x - half < 0 || x + half > this.canvas.width))
        cut.push(String(text));
      return fillText.call(this, text, x, y, ...rest);
    };
  });
  const drawn = () => page.evaluate(() => (window as unknown as { drawnTexts: string[] }).drawnTexts);
  const times = (texts: string[]) => texts.filter((t) => /[:/-]|am|pm/i.test(t));
  for (const [range, form] of [
    ['1h', /^\d{2}:\d{2}$|^\d{4}-\d{2}-\d{2}$/],
    ['24h', /^\d{2}:\d{2}$|^\d{4}-\d{2}-\d{2}$/],
    ['7d', /^\d{2}:\d{2}$|^\d{4}-\d{2}-\d{2}$/],
    ['30d', /^\d{4}-\d{2}(-\d{2})?$/],
    ['90d', /^\d{4}-\d{2}(-\d{2})?$/],
  ] as const) {
    await page.goto(`${tab.session.consoleUrl}#/keys/${key.id}?range=${range}`);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'axis' }).waitFor();
    await page.locator('.chart-canvas canvas').first().waitFor();
    await page.waitForFunction(() =>
      (window as unknown as { drawnTexts: string[] }).drawnTexts.some((t) => /[:-]/.test(t)),
    );
    const labels = times(await drawn());
    expect(labels.length).toBeGreaterThan(1);
    expect(labels.filter((t) => !form.test(t) && t !== 'Time (UTC)')).toEqual([]);
    // The axis says its times are UTC, and no time label is cut at the chart's edge.
    expect(await drawn()).toContain('Time (UTC)');
    expect(
      await page.evaluate(() =>
        (window as unknown as { cutTexts: string[] }).cutTexts.filter((t) => /\d/.test(t)),
      ),
    ).toEqual([]);
  }
});

it('downloads the key’s usage as the API’s CSV, the range on screen, without the token in any URL', async () => {
  const key = await newKey({ name: 'exported' });
  const since = new Date().toISOString();
  for (const path of ['/v1/a', '/v1/b']) expect(await hit(tollgate, key.secret, path)).toBe(200);
  await untilStored(key.id, 2, since);
  const { page } = tab.session;
  await visit(tab.session, `keys/${key.id}?range=7d`, 'exported');
  await page.getByRole('list', { name: 'Series' }).getByRole('button', { name: 'Requests: 2' }).waitFor();
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page
      .getByRole('region', { name: 'Usage over time' })
      .getByRole('button', { name: 'Download CSV' })
      .click(),
  ]);
  const asked = tab.session.requests
    .filter((u) => u.includes(`/consumer-api-key/${key.id}/usage?`) && !u.includes('groupBy'))
    .at(-1)!;
  const query = new URL(asked).searchParams;
  expect(query.get('granularity')).toBe('hour');
  const expected = await fetch(asked, {
    headers: { authorization: `Bearer ${tollgate.rootToken}`, accept: 'text/csv' },
  });
  expect(expected.headers.get('content-type')).toMatch(/^text\/csv/);
  const file = await downloadedText(download);
  expect(file).toBe(await expected.text());
  expect(file.split('\r\n')[0]).toMatch(
    /^start,requests,successful,failed,rateLimited,averageResponseTimeMs,cost,/,
  );
  const fileTime = (name: string) => query.get(name)!.replace(/[-:]/g, '');
  expect(download.suggestedFilename()).toBe(`usage-${key.id}-hour-${fileTime('from')}-${fileTime('to')}.csv`);
  expect(tab.session.requests.filter((u) => u.includes(tollgate.rootToken))).toEqual([]);
});

it('renames the key and changes its owner and metadata', async () => {
  const key = await newKey({ name: 'old-name', externalId: 'cus_1', metadata: { tier: 'free' } });
  await visit(tab.session, `keys/${key.id}`, 'old-name');
  const { page } = tab.session;
  await page.getByRole('button', { name: 'Edit…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit the key' });
  expect(await dialog.getByLabel('Name').inputValue()).toBe('old-name');
  await dialog.getByLabel('Name').fill('new-name');
  await dialog.getByLabel('External ID').fill('');
  await dialog.getByLabel('Metadata (JSON object)').fill('{"tier": "gold", "region": "eu"}');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { level: 1, name: 'new-name' }).waitFor();
  expect(await keyDetail(key.id)).toMatchObject({
    name: 'new-name',
    externalId: null,
    metadata: { tier: 'gold', region: 'eu' },
  });
  expect(await page.getByRole('region', { name: 'Metadata' }).locator('pre').innerText()).toBe(
    JSON.stringify({ tier: 'gold', region: 'eu' }, null, 2),
  );
});

it('deletes the key only once confirmed', async () => {
  const key = await newKey({ name: 'doomed' });
  await visit(tab.session, `keys/${key.id}`, 'doomed');
  const { page } = tab.session;
  const dialog = page.getByRole('dialog', { name: 'Delete doomed?' });
  await page.getByRole('button', { name: 'Delete…' }).click();
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).status).toBe(200);

  await page.getByRole('button', { name: 'Delete…' }).click();
  await dialog.getByRole('button', { name: 'Delete key' }).click();
  await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
  // The list says what happened to the key that is no longer in it.
  await page
    .getByRole('status')
    .filter({ hasText: 'The key doomed is deleted: its requests are refused from now on.' })
    .waitFor();
  expect((await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).status).toBe(404);
  expect(await hit(tollgate, key.secret)).toBe(401);

  // Its page now shows the API's answer.
  await page.goto(`${tab.session.consoleUrl}#/keys/${key.id}`);
  await page.getByRole('alert').filter({ hasText: 'No consumer API key has that id' }).waitFor();
});

it("shows the fleet's requests, 429s and errors and the busiest keys on the overview, as /tollgate/usage reports them", async () => {
  const busy = await newKey({ name: 'busiest', rateLimitId: 'two-a-day' });
  const since = new Date().toISOString();
  for (const path of ['/v1/a', '/v1/b', '/v1/c', '/v1/status/500']) await hit(tollgate, busy.secret, path);
  // Its detail, read while its usage is handed to Redis, would leave it out of the totals below.
  await untilStored(busy.id, 4, since);
  // The fleet view reads stored buckets (about a second behind): wait until it holds every key's totals.
  const listed = (await tollgate.admin('GET', '/consumer-api-key?limit=1000')).body.apiKeys as {
    consumerApiKeyId: string;
  }[];
  const totals = await Promise.all(
    listed.map(async (k) => (await keyDetail(k.consumerApiKeyId)).usage.totalRequests as number),
  );
  const expected = totals.reduce((a, b) => a + b, 0);
  const { value: fleet } = await waitFor(
    async () => (await tollgate.admin('GET', '/tollgate/usage?granularity=hour')).body,
    (f) => sum(f.buckets, 'requests') === expected,
    { timeoutMs: 10_000 },
  );
  expect(sum(fleet.buckets, 'requests')).toBe(expected);

  const { page } = tab.session;
  // Signing in opened the overview before this traffic: Refresh asks again.
  await visit(tab.session, '', 'Overview');
  await page.getByRole('button', { name: 'Refresh' }).click();
  const stats = page.getByRole('definition');
  await page
    .getByRole('list', { name: 'Series' })
    .getByRole('button', { name: `Requests: ${expected}` })
    .waitFor();
  expect(await stats.allInnerTexts()).toEqual(
    [
      sum(fleet.buckets, 'requests'),
      sum(fleet.buckets, 'rateLimited'),
      sum(fleet.buckets, 'failed') - sum(fleet.buckets, 'rateLimited'),
      sum(fleet.buckets, 'successful'),
    ].map(String),
  );
  const top = page.getByRole('region', { name: 'Top keys' });
  const rows = await top
    .getByRole('row')
    .evaluateAll((trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText)));
  expect(rows).toEqual(
    (
      fleet.topKeys as { consumerApiKeyId: string; name: string; requests: number; rateLimited: number }[]
    ).map((k) => [`${k.name} ${k.consumerApiKeyId}`, String(k.requests), String(k.rateLimited)]),
  );
  expect(rows.some((r) => r[0]!.startsWith('busiest'))).toBe(true);

  // The fleet's buckets as the API's CSV, for the range on screen.
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Download CSV' }).click(),
  ]);
  const asked = tab.session.requests.filter((u) => u.includes('/tollgate/usage?')).at(-1)!;
  const csv = await fetch(asked, {
    headers: { authorization: `Bearer ${tollgate.rootToken}`, accept: 'text/csv' },
  });
  expect(await downloadedText(download)).toBe(await csv.text());
  expect(download.suggestedFilename()).toMatch(/^usage-all-keys-hour-\d{8}T\d{6}Z-\d{8}T\d{6}Z\.csv$/);

  await top.getByRole('link', { name: 'busiest' }).click();
  await page.getByRole('heading', { level: 1, name: 'busiest' }).waitFor();
});

it('masks a revealed secret again after 30 seconds', async () => {
  const key = await newKey({ name: 'revealed' });
  const { page } = tab.session;
  // The page's own clock, moved on by the test: no wait for real seconds.
  await page.clock.install();
  await visit(tab.session, `keys/${key.id}`, 'revealed');
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'revealed' }).waitFor();
  const field = page.getByLabel('Secret', { exact: true });
  expect(await field.inputValue()).not.toBe(key.secret);
  await page.getByRole('button', { name: 'Reveal' }).click();
  expect(await field.inputValue()).toBe(key.secret);
  await page.getByText('Masked again after 30 seconds.').waitFor();
  // runFor fires every timer on the way, those armed meanwhile too (the page's effects run after a
  // frame of the same clock); fastForward fired each due timer once, and missed one armed late.
  await page.clock.runFor(29_000);
  expect(await field.inputValue()).toBe(key.secret);
  await page.clock.runFor(2_000);
  await page.getByRole('button', { name: 'Reveal' }).waitFor();
  expect(await field.inputValue()).toMatch(/^tg_•+.{4}$/);
});
