// `npm run bench -- portal`: how soon a customer can use the developer portal with 10 keys and 90
// days of usage, in Chromium against one embedded Tollgate. Tollgate's clock (TEST_CLOCK_FILE) is moved
// a day at a time while each key sends requests, so usage spans 90 days; the browser's clock is set to
// Tollgate's. Each round opens a fresh sign-in link in a fresh browser context and times, from the
// navigation's start (the link, its 303 and the page; timed by the runner), the keys page with all ten keys and its create
// button ready, then the usage page's 90-day charts; beside them, in the same rounds, the console's
// overview over the same 90 days (a token typed in, then its charts), the page the portal's charts
// come from. Medians of BENCH_ROUNDS rounds (at least 5).
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { PORT, ROOT_TOKEN, ROUNDS, log, run } from '../lib/config.ts';
import { fmt, machine, median, ratio } from '../lib/report.ts';
import { buildTollgate, management, startBackend, startTollgate } from '../lib/services.ts';

const KEYS = 10;
const DAYS = 90;
const DAY_MS = 86_400_000;
/** Requests each key sends on each day: 9,000 over the 90 days. */
const PER_KEY_PER_DAY = 10;

async function admin<T>(port: number, method: string, route: string, body?: unknown): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${port}${route}`, {
    method,
    headers: { authorization: `Bearer ${ROOT_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${route} → ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Milliseconds from `navigate` starting until `ready` resolves, timed by the runner (the page's own clock is set to Tollgate's). */
async function timed(navigate: () => Promise<unknown>, ready: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await navigate();
  await ready();
  return performance.now() - started;
}

const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

export async function portal(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  await startBackend();
  const port = PORT.tollgateEmbedded;
  const clockFile = path.join(run.workDir, 'portal-clock-offset-ms');
  fs.writeFileSync(clockFile, '0');
  // Tollgate refuses a test clock in production; what is timed here is the browser, not the proxy.
  await startTollgate({
    name: 'portal',
    port,
    mode: 'embedded',
    extraEnv: { TEST_CLOCK_FILE: clockFile, NODE_ENV: 'development' },
  });
  await management(port, '/rate-limit/create', {
    rateLimitId: 'portal-bench',
    limit: 1_000_000,
    period: 'day',
  });
  await admin(port, 'PATCH', '/tollgate/portal/settings', {
    enabled: true,
    title: 'Bench API',
    publicPlans: ['portal-bench'],
  });
  const consumerId = (
    await management(port, '/tollgate/consumers', { name: 'Bench customer', rateLimitId: 'portal-bench' })
  ).consumerId as string;
  const secrets: string[] = [];
  for (let k = 0; k < KEYS; k++)
    secrets.push(
      String(
        (await management(port, '/consumer-api-key/create', { name: `key ${k + 1}`, consumerId })).secret,
      ),
    );

  const start = Date.now();
  for (let day = 0; day < DAYS; day++) {
    fs.writeFileSync(clockFile, String(day * DAY_MS));
    await Promise.all(
      secrets.map(async (secret) => {
        for (let i = 0; i < PER_KEY_PER_DAY; i++) {
          const res = await fetch(`http://127.0.0.1:${port}/bench/item?day=${day}`, {
            headers: { 'x-api-key': secret },
          });
          await res.arrayBuffer();
        }
      }),
    );
  }
  /** Tollgate's clock: the wall clock moved on by the last day's offset. */
  const tollgateNow = () => Date.now() + (DAYS - 1) * DAY_MS;
  // The recorder writes every 500 ms: wait until the last day's requests are in.
  const total = KEYS * DAYS * PER_KEY_PER_DAY;
  const range = `from=${iso(start - DAY_MS)}&to=${iso(tollgateNow() + DAY_MS)}&granularity=day`;
  for (let waited = 0; ; waited += 250) {
    const usage = await admin<{ buckets: { requests: number }[] }>(
      port,
      'GET',
      `/tollgate/consumers/${consumerId}/usage?${range}`,
    );
    const counted = usage.buckets.reduce((sum, b) => sum + b.requests, 0);
    if (counted === total) break;
    if (waited > 20_000) throw new Error(`portal: ${counted} of ${total} requests counted`);
    await new Promise((r) => setTimeout(r, 250));
  }
  log(`portal: ${total} requests over ${DAYS} days for ${KEYS} keys`);

  const browser: Browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  const rounds = { keys: [] as number[], usage: [] as number[], console: [] as number[] };
  try {
    for (let round = 0; round < Math.max(ROUNDS, 5); round++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC' });
      const page = await context.newPage();
      await page.clock.install({ time: tollgateNow() });
      const { url: link } = await admin<{ url: string }>(port, 'POST', '/tollgate/portal/sessions', {
        consumerId,
        user: { id: 'bench' },
      });
      const requests = `Requests: ${total.toLocaleString('en')}`;
      rounds.keys.push(
        await timed(
          () => page.goto(new URL(link, `http://127.0.0.1:${port}`).href, { waitUntil: 'commit' }),
          async () => {
            await page.getByRole('row').nth(KEYS).waitFor();
            await page.getByRole('button', { name: 'Create key' }).waitFor();
          },
        ),
      );
      rounds.usage.push(
        await timed(
          async () => {
            await page.goto(`http://127.0.0.1:${port}/tollgate/portal/#/usage?range=90d`, {
              waitUntil: 'commit',
            });
            await page.reload({ waitUntil: 'commit' });
          },
          () => page.getByRole('list', { name: 'Series' }).getByRole('button', { name: requests }).waitFor(),
        ),
      );
      const consolePage = await context.newPage();
      await consolePage.clock.install({ time: tollgateNow() });
      rounds.console.push(
        await timed(
          async () => {
            await consolePage.goto(`http://127.0.0.1:${port}/tollgate/console/#/?range=90d`, {
              waitUntil: 'commit',
            });
            await consolePage.getByLabel('Root token or admin token').fill(ROOT_TOKEN);
            await consolePage.getByRole('button', { name: 'Sign in' }).click();
          },
          () =>
            consolePage
              .getByRole('list', { name: 'Series' })
              .first()
              .getByRole('button', { name: requests })
              .waitFor(),
        ),
      );
      await context.close();
      log(
        `round ${round + 1}: keys ${fmt(rounds.keys.at(-1)!)} ms, usage ${fmt(rounds.usage.at(-1)!)} ms, console ${fmt(rounds.console.at(-1)!)} ms`,
      );
    }
  } finally {
    await browser.close();
  }
  const row = (label: string, ms: number[]) =>
    `| ${label} | ${fmt(median(ms))} | ${ratio(median(ms), median(rounds.console))} | ${fmt(Math.max(...ms))} | ${ms.map((m) => fmt(m)).join(' / ')} |`;
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- portal\` (${machine()}; embedded, Chromium 1280×900, ${rounds.keys.length} rounds, medians).`,
    '',
    `${KEYS} keys of one consumer, ${total.toLocaleString('en')} requests spread over ${DAYS} days. Times from the navigation's start, taken by the runner.`,
    '',
    '| page | ms | ÷ console overview | slowest ms | ms per round |',
    '|---|--:|--:|--:|---|',
    row('portal: sign-in link → keys page, 10 keys, create button ready', rounds.keys),
    row('portal: usage page, 90 days of charts drawn', rounds.usage),
    row('console: overview, token typed in → 90 days of charts drawn', rounds.console),
  ].join('\n');
}
