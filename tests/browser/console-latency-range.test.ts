/**
 * The response times a usage chart's legend gives for its whole range are the range's (issue 41: it
 * showed the slowest bucket's): nineteen fast requests in one minute and one slow one in the next, so
 * the range's p95 is a fast request's while the second minute's p95 is the slow one. The legend says
 * what the usage API's `latencyMs` says, in Chromium against a built Tollgate on a test clock.
 */
import { waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { consoleSuite, requestsStored, signedInTab, visit } from './helpers/console-browser.js';

interface Percentiles {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

let tollgate: Tollgate;
let key: { id: string; secret: string };
const SLOW_MS = 2_000;
/**
 * The longest a fast request took as its client saw it: Tollgate records no more than that (within
 * its percentiles' 5 %), however slow a loaded machine made it.
 */
let slowestFastMs = 0;
// The percentiles' bins are within 5 % of what they hold.
const WITHIN = 1.05;

const proxied = async (path: string) => {
  const sentAt = performance.now();
  const res = await fetch(tollgate.url + path, { headers: { authorization: `Bearer ${key.secret}` } });
  await res.arrayBuffer();
  if (path === '/v1/fast') slowestFastMs = Math.max(slowestFastMs, performance.now() - sentAt);
  return res.status;
};

const clock = new TestClock();
const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    key = (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'timed' })).body;
    clock.after(MINUTE_MS, 1_000);
    const counted = (n: number) =>
      waitFor(
        async () => (await tollgate.admin('GET', `/consumer-api-key/${key.id}`)).body.usage.totalRequests,
        (total) => total === n,
      );
    for (let i = 0; i < 19; i++) expect(await proxied('/v1/fast')).toBe(200);
    // A request is counted as its answer finishes, on the clock of that moment: the clock moves once all are.
    await counted(19);
    clock.advance(MINUTE_MS);
    expect(await proxied(`/slow/${SLOW_MS}`)).toBe(200);
    await counted(20);
    await requestsStored(suite, key.id, 20);
  },
  120_000,
  clock.env,
);
const tab = signedInTab(suite, () => tollgate.rootToken);

/** As the console writes a time: one decimal under 10 ms, else whole milliseconds. */
const ms = (value: number) => `${value < 10 ? value.toFixed(1) : Math.round(value).toLocaleString('en')} ms`;

it('gives the range’s p50, p95 and p99 over all its requests, not its slowest bucket’s', async () => {
  const { page } = tab.session;
  // The page's clock is Tollgate's: the range of the last hour ends now on both.
  await page.clock.setFixedTime(clock.now() + 1_000);
  await visit(tab.session, `keys/${key.id}?range=1h`, 'timed');
  const latency = page.getByRole('list', { name: 'Percentiles' });
  await latency.getByText('Over all the range’s requests').waitFor();
  const asked = tab.session.requests
    .filter(
      (u) => new URL(u).pathname.endsWith(`/consumer-api-key/${key.id}/usage`) && !u.includes('groupBy'),
    )
    .at(-1)!;
  const answer = (await (
    await fetch(asked, { headers: { authorization: `Bearer ${tollgate.rootToken}` } })
  ).json()) as { buckets: { requests: number; latencyMs: Percentiles }[]; latencyMs: Percentiles };
  const used = answer.buckets.filter((b) => b.requests > 0);
  expect(used.map((b) => b.requests)).toEqual([19, 1]);
  // The slow minute's p95 is the slow request; the range's is the 19th fastest of 20: a fast one.
  const slow = used[1]!.latencyMs.p95!;
  expect(slow).toBeGreaterThanOrEqual(SLOW_MS / WITHIN);
  // Else no percentile could tell a fast request from the slow one.
  expect(slowestFastMs * WITHIN).toBeLessThan(slow / WITHIN);
  expect(answer.latencyMs.p95).toBeLessThanOrEqual(slowestFastMs * WITHIN);
  expect(answer.latencyMs.p99).toBe(slow);
  await latency.getByRole('button', { name: /^p95: / }).waitFor();
  expect(await latency.getByRole('button').allInnerTexts()).toEqual(
    (['p50', 'p95', 'p99'] as const).map((p) => `${p}: ${ms(answer.latencyMs[p]!)}`),
  );
});
