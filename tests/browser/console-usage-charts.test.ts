/**
 * Why requests failed and how fast they were (docs/guides/console.md, docs/decisions/0026), in the console's charts for a key,
 * a consumer and the fleet, in Chromium against a built Tollgate and a real backend: requests refused
 * by the limiter, by a disabled or expired key, by a route, an origin or an address the key may not use, answered 5xx by the
 * backend or 502 for a backend that cannot be reached, each counted as the usage API counts it; the
 * status classes the clients got; p50, p95 and p99; and the consumer's usage as the API's CSV.
 */
import { hit, sleep, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import {
  consoleSuite,
  downloadedText,
  requestsStored,
  seriousAccessibilityViolations,
  signedInTab,
  visit,
  type ConsoleSession,
} from './helpers/console-browser.js';

interface Bucket {
  readonly requests: number;
  readonly statusClasses: Record<'2xx' | '3xx' | '4xx' | '5xx', number>;
  readonly outcomes: Record<string, number>;
  readonly latencyMs: Record<'p50' | 'p95' | 'p99', number | null>;
}

let tollgate: Tollgate;
let key: { id: string; secret: string };
let consumerId = '';
const REQUESTS = 15;
/** When the last of them was answered. */
let lastRequestAt = 0;
/** Tollgate's clock and the pages': moved to the start of a minute rather than waiting for one. */
const clock = new TestClock();

const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    const admin = tollgate.admin.bind(tollgate);
    await admin('POST', '/rate-limit/create', { rateLimitId: 'tight', limit: 8, period: 'minute' });
    consumerId = (await admin('POST', '/tollgate/consumers', { name: 'Acme' })).body.consumerId;
    key = (
      await admin('POST', '/consumer-api-key/create', { name: 'charts', rateLimitId: 'tight', consumerId })
    ).body;
    // A backend nothing listens for: Tollgate answers 502.
    await admin('POST', '/tollgate/routes', {
      routeId: 'dead',
      match: { pathPrefix: '/dead' },
      upstreamUrl: 'http://127.0.0.1:1',
    });
    // The route reaches every replica's table within a second.
    await sleep(2_000);
    // Everything the limiter counts within one minute window: 8 admitted (one to the dead backend), then 2 refused.
    clock.after(MINUTE_MS, 100);
    const statuses: number[] = [await hit(tollgate, key.secret, '/dead/x')];
    for (const path of ['/v1/items', '/v1/items', '/v1/items', '/v1/status/503', '/v1/status/503'])
      statuses.push(await hit(tollgate, key.secret, path));
    for (let i = 0; i < 4; i++) statuses.push(await hit(tollgate, key.secret, '/v1/items'));
    expect(statuses).toEqual([502, 200, 200, 200, 503, 503, 200, 200, 429, 429]);
    // A route the key may not take, then a disabled key, then an expired one: refused before the limiter.
    await admin('PATCH', `/consumer-api-key/${key.id}`, { allowedRouteIds: ['dead'] });
    expect(await hit(tollgate, key.secret, '/v1/items')).toBe(403);
    // A key for one web page, called with no origin; then one for another client address.
    await admin('PATCH', `/consumer-api-key/${key.id}`, {
      allowedRouteIds: null,
      allowedOrigins: ['https://app.example.com'],
    });
    expect(await hit(tollgate, key.secret, '/v1/items')).toBe(403);
    await admin('PATCH', `/consumer-api-key/${key.id}`, {
      allowedOrigins: null,
      allowedAddresses: ['192.0.2.0/24'],
    });
    expect(await hit(tollgate, key.secret, '/v1/items')).toBe(403);
    await admin('PATCH', `/consumer-api-key/${key.id}`, { allowedAddresses: null, enabled: false });
    expect(await hit(tollgate, key.secret, '/v1/items')).toBe(403);
    await admin('PATCH', `/consumer-api-key/${key.id}`, { enabled: true, expiresAt: '2020-01-01T00:00:00Z' });
    // The last request in the first moments of a minute, so that the page can open in that minute's first second.
    clock.after(MINUTE_MS, 100);
    expect(await hit(tollgate, key.secret, '/v1/items')).toBe(401);
    lastRequestAt = clock.now();
    await requestsStored(suite, key.id, REQUESTS);
  },
  120_000,
  clock.env,
);
const tab = signedInTab(
  suite,
  () => tollgate.rootToken,
  () => clock.now(),
);

type Percentiles = Bucket['latencyMs'];

/** The usage API's answer for `path` with the page's own query (the last it asked). */
async function rangeAsked(
  s: ConsoleSession,
  path: string,
): Promise<{ buckets: Bucket[]; latencyMs: Percentiles }> {
  const asked = s.requests
    .filter((u) => new URL(u).pathname.endsWith(path) && !u.includes('groupBy'))
    .at(-1)!;
  const res = await fetch(asked, { headers: { authorization: `Bearer ${tollgate.rootToken}` } });
  return (await res.json()) as { buckets: Bucket[]; latencyMs: Percentiles };
}

/** The buckets of `rangeAsked`. */
const bucketsAsked = async (s: ConsoleSession, path: string): Promise<Bucket[]> =>
  (await rangeAsked(s, path)).buckets;

const total = (buckets: readonly Bucket[], value: (b: Bucket) => number) =>
  buckets.reduce((sum, b) => sum + value(b), 0);
const slowest = (buckets: readonly Bucket[], p: 'p50' | 'p95' | 'p99') =>
  Math.max(...buckets.map((b) => b.latencyMs[p] ?? 0));
/** As the console writes a time: one decimal under 10 ms, else whole milliseconds. */
const ms = (value: number) => `${value < 10 ? value.toFixed(1) : Math.round(value).toLocaleString('en')} ms`;

const OUTCOMES: [string, string][] = [
  ['Rate limited', 'rateLimited'],
  ['Credits exhausted', 'creditsExhausted'],
  ['Too many in flight', 'concurrencyLimited'],
  ['Disabled', 'disabled'],
  ['Expired', 'expired'],
  ['Route not allowed', 'routeNotAllowed'],
  ['Origin not allowed', 'originNotAllowed'],
  ['Address not allowed', 'addressNotAllowed'],
  ['Backend 5xx', 'backendError'],
  ['Backend unreachable or timed out (502, 504)', 'backendUnreachable'],
];

/** The outcome, status class and latency legends say what the API's buckets say. */
async function chartsAgree(
  s: ConsoleSession,
  { buckets, latencyMs }: { buckets: readonly Bucket[]; latencyMs: Percentiles },
): Promise<void> {
  const { page } = s;
  const outcomes = page.getByRole('list', { name: 'Outcomes' });
  await outcomes.getByRole('button', { name: /^Rate limited: / }).waitFor();
  expect(await outcomes.getByRole('button').allInnerTexts()).toEqual(
    OUTCOMES.map(([label, field]) => `${label}: ${total(buckets, (b) => b.outcomes[field]!)}`),
  );
  await page
    .getByRole('group', { name: 'Failures by' })
    .getByRole('button', { name: 'Status classes' })
    .click();
  const classes = page.getByRole('list', { name: 'Status classes' });
  await classes.getByRole('button', { name: /^2xx: / }).waitFor();
  expect(await classes.getByRole('button').allInnerTexts()).toEqual(
    (['2xx', '3xx', '4xx', '5xx'] as const).map((c) => `${c}: ${total(buckets, (b) => b.statusClasses[c])}`),
  );
  const latency = page.getByRole('list', { name: 'Percentiles' });
  expect(await latency.getByRole('button').allInnerTexts()).toEqual(
    (['p50', 'p95', 'p99'] as const).map((p) => `${p}: ${ms(latencyMs[p]!)}`),
  );
  await latency.getByText('Over all the range’s requests').waitFor();
  await page
    .getByRole('group', { name: 'Failures by' })
    .getByRole('button', { name: 'Why requests failed' })
    .click();
  await outcomes.waitFor();
}

it('charts why the key’s requests failed, what its clients got and how fast, as the usage API counts them', async () => {
  const { page } = tab.session;
  // Opened as the last request was answered, in the first second of its minute: that minute is in the
  // range (the range's end, in whole seconds, once left it out until the next refresh).
  await page.clock.setFixedTime(lastRequestAt);
  await visit(tab.session, `keys/${key.id}?range=1h`, 'charts');
  await page
    .getByRole('list', { name: 'Series' })
    .getByRole('button', { name: `Requests: ${REQUESTS}` })
    .waitFor();
  const range = await rangeAsked(tab.session, `/consumer-api-key/${key.id}/usage`);
  const { buckets } = range;
  expect(total(buckets, (b) => b.requests)).toBe(REQUESTS);
  // Each outcome happened as set up: the chart has something to show of each but credits.
  expect(Object.fromEntries(OUTCOMES.map(([, f]) => [f, total(buckets, (b) => b.outcomes[f]!)]))).toEqual({
    rateLimited: 2,
    creditsExhausted: 0,
    concurrencyLimited: 0,
    disabled: 1,
    expired: 1,
    routeNotAllowed: 1,
    originNotAllowed: 1,
    addressNotAllowed: 1,
    backendError: 2,
    backendUnreachable: 1,
  });
  expect(slowest(buckets, 'p99')).toBeGreaterThan(0);
  await chartsAgree(tab.session, range);
  // Stacked bars and lines are drawn, and their figures are there as tables too.
  // Each chart draws its canvas once laid out, a moment after its legend shows.
  await page.waitForFunction(() => document.querySelectorAll('figure.chart canvas').length >= 3);
  await page.getByRole('button', { name: 'Show the outcomes as a table' }).click();
  const outcomeTable = page
    .locator('figure.chart')
    .filter({ hasText: 'why requests failed' })
    .locator('tbody tr');
  expect(await outcomeTable.count()).toBe(buckets.length);
  await page.getByRole('button', { name: 'Show the response times as a table' }).click();
  const latencyRows = page.locator('figure.chart').filter({ hasText: 'response times' }).locator('tbody tr');
  expect(await latencyRows.count()).toBe(buckets.length);
  // An empty bucket has no percentile: a dash, not 0 ms.
  if (buckets.some((b) => b.latencyMs.p50 === null))
    expect(await latencyRows.filter({ hasText: '—' }).count()).toBeGreaterThan(0);
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
});

it('charts a consumer’s usage like a key’s, and downloads it as the API’s CSV', async () => {
  const { page } = tab.session;
  await visit(tab.session, `consumers/${consumerId}?range=1h`, 'Acme');
  const usage = page.getByRole('region', { name: 'Usage over time' });
  await usage
    .getByRole('list', { name: 'Series' })
    .getByRole('button', { name: `Requests: ${REQUESTS}` })
    .waitFor();
  await page.getByText('This consumer, last hour, per minute', { exact: true }).waitFor();
  await chartsAgree(tab.session, await rangeAsked(tab.session, `/tollgate/consumers/${consumerId}/usage`));

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    usage.getByRole('button', { name: 'Download CSV' }).click(),
  ]);
  const asked = tab.session.requests
    .filter((u) => u.includes(`/tollgate/consumers/${consumerId}/usage?`))
    .at(-1)!;
  const expected = await fetch(asked, {
    headers: { authorization: `Bearer ${tollgate.rootToken}`, accept: 'text/csv' },
  });
  const file = await downloadedText(download);
  expect(file).toBe(await expected.text());
  expect(file.split('\r\n')[0]).toContain('status2xx');
  expect(file.split('\r\n')[0]).toContain('latencyP99Ms');
  const query = new URL(asked).searchParams;
  const fileTime = (name: string) => query.get(name)!.replace(/[-:]/g, '');
  expect(download.suggestedFilename()).toBe(
    `usage-${consumerId}-minute-${fileTime('from')}-${fileTime('to')}.csv`,
  );
  expect(tab.session.requests.filter((u) => u.includes(tollgate.rootToken))).toEqual([]);
});

it('charts the fleet’s failures and response times on the overview', async () => {
  const { page } = tab.session;
  await visit(tab.session, '?range=1h', 'Overview');
  await page.getByText('All keys, last hour, per minute', { exact: true }).waitFor();
  await page
    .getByRole('list', { name: 'Series' })
    .getByRole('button', { name: `Requests: ${REQUESTS}` })
    .waitFor();
  await chartsAgree(tab.session, await rangeAsked(tab.session, '/tollgate/usage'));
  await page.getByText('Proxy or verify?').click();
  await page.getByText('docs/guides/verify-and-client.md').waitFor();
});

it('counts every 429 in the overview’s Refused card, those for want of credits too', async () => {
  const broke = (
    await tollgate.admin('POST', '/consumer-api-key/create', { name: 'broke', credits: { remaining: 0 } })
  ).body;
  expect(await hit(tollgate, broke.secret, '/v1/items')).toBe(429);
  // The fleet's usage is read from stored usage, about a second behind: the refusal is in it first.
  const stored = await waitFor(
    async () =>
      total(
        (await tollgate.admin('GET', `/tollgate/usage?granularity=hour`)).body.buckets as Bucket[],
        (b) => b.outcomes.creditsExhausted!,
      ),
    (n) => n === 1,
  );
  expect(stored.value).toBe(1);
  const { page } = tab.session;
  // The tab signed in on the overview's default range, loaded before that refusal; its figures stay on
  // screen until the last hour's arrive, which the caption's granularity tells.
  await visit(tab.session, '?range=1h', 'Overview');
  await page.getByText('All keys, last hour, per minute', { exact: true }).waitFor();
  const buckets = await bucketsAsked(tab.session, '/tollgate/usage');
  const limited = total(buckets, (b) => b.outcomes.rateLimited!);
  const creditless = total(buckets, (b) => b.outcomes.creditsExhausted!);
  const placeless = total(buckets, (b) => b.outcomes.concurrencyLimited!);
  expect(creditless).toBeGreaterThan(0);
  expect(limited).toBeGreaterThan(0);
  const refused = page.locator('dl.stats div').filter({ hasText: 'Refused (429)' }).getByRole('definition');
  expect(await refused.innerText()).toBe(String(limited + creditless + placeless));
  await page
    .getByRole('list', { name: 'Series' })
    .getByRole('button', { name: `429s: ${limited + creditless}` })
    .waitFor();
});
