/**
 * Driving the console in Debian's Chromium (tests/browser/helpers/chromium.ts; no browser is
 * ever downloaded) with playwright-core. Each session records what a reviewer would want to know: every
 * request the page made, console errors, page errors and Content-Security-Policy violations.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Download, Locator, Page } from 'playwright-core';
import { launchChromium } from './chromium.js';
import { startEmbedded, startFleet, waitFor, type Fleet } from '../../e2e/helpers/replicas.js';
import type { Tollgate } from '../../e2e/helpers/tollgate.js';
import { storedMinuteRequests } from '../../helpers/stored-usage.js';

export interface ConsoleSession {
  readonly context: BrowserContext;
  readonly page: Page;
  /** `{prefix}/tollgate/console/` on the Tollgate under test. */
  readonly consoleUrl: string;
  /** Every URL the page requested, in order. */
  readonly requests: string[];
  /** Every URL the main frame navigated to. */
  readonly navigations: string[];
  /** console.error messages and uncaught page errors. */
  readonly errors: string[];
  /** securitypolicyviolation events: `<directive> <blocked URI>`. */
  readonly cspViolations: string[];
}

declare global {
  interface Window {
    tollgateCspViolation?: (text: string) => void;
  }
}

/**
 * A fresh browser context (its own session storage) on the console's page, not signed in yet. With
 * `clock` (a test clock Tollgate follows, tests/helpers/test-clock.ts) the page's time agrees with it.
 */
export function openConsole(
  browser: Browser,
  tollgate: Tollgate,
  prefix = '',
  clock?: () => number,
): Promise<ConsoleSession> {
  return openTab(browser, tollgate, `${tollgate.url}${prefix}/tollgate/console/`, clock);
}

/**
 * A fresh browser context on a page of Tollgate's (the console, the portal), recording its requests,
 * navigations, errors and CSP violations. `consoleUrl`: the page opened. With `clock`, the page's time
 * agrees with it; `prepare` runs on the context before the page opens (routes of other sites).
 */
export async function openTab(
  browser: Browser,
  tollgate: Tollgate,
  url: string,
  clock?: () => number,
  prepare?: (context: BrowserContext) => Promise<void>,
): Promise<ConsoleSession> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  if (clock) await context.clock.setSystemTime(clock());
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: tollgate.url });
  const session: ConsoleSession = {
    context,
    page: await context.newPage(),
    consoleUrl: url,
    requests: [],
    navigations: [],
    errors: [],
    cspViolations: [],
  };
  context.on('request', (req) => session.requests.push(req.url()));
  await context.exposeBinding('tollgateCspViolation', (_source, text: string) =>
    session.cspViolations.push(text),
  );
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      window.tollgateCspViolation?.(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  await prepare?.(context);
  const { page } = session;
  // A hang guard, not a bound: beside a whole test run on 2 CPUs, the portal's reference page loads
  // slowly.
  page.setDefaultTimeout(60_000);
  page.on('console', (m) => {
    if (m.type() === 'error') session.errors.push(m.text());
  });
  page.on('pageerror', (e) => session.errors.push(`page error: ${e.message}`));
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) session.navigations.push(frame.url());
  });
  await page.goto(session.consoleUrl);
  return session;
}

/**
 * Waits until the store holds a key's `requests` in its minute buckets. Until then a view of usage
 * (a key's detail, its charts) reads part of it from Redis or a process's memory, and may show a
 * request a moment late while a flush moves it on (`pending` in src/usage/recorder.ts); a chart drawn
 * in that moment is not drawn again.
 */
export async function requestsStored(suite: ConsoleSuite, keyId: string, requests: number): Promise<void> {
  const database = suite.fleet.database;
  if (database === undefined) throw new Error('requestsStored reads a Postgres fleet');
  await waitFor(
    () => storedMinuteRequests({ databaseUrl: database.url }, [keyId]),
    (n) => n === requests,
  );
}

/** Signs in through the form and waits for the overview. */
export async function signIn(session: ConsoleSession, token: string): Promise<void> {
  const { page } = session;
  await page.getByLabel('Root token or admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/** Opens a console page by its fragment (`keys/key_…`) and waits for its heading. */
export async function visit(
  session: ConsoleSession,
  fragment: string,
  heading: string | RegExp,
): Promise<void> {
  await session.page.goto(`${session.consoleUrl}#/${fragment}`);
  await session.page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/**
 * Errors the session met other than the browser's notes on API answers the test provoked on purpose
 * (a 403 for a missing scope, a 409 for a plan in use): script errors, refused resources, CSP.
 */
export function unexpectedErrors(session: ConsoleSession): string[] {
  return [
    ...session.errors.filter(
      (e) => !/^Failed to load resource: the server responded with a status of 4\d\d/.test(e),
    ),
    ...session.cspViolations,
  ];
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical findings on the page as it is now (axe is injected by the test, never shipped). */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run(
            context: Document,
            options: object,
          ): Promise<{
            violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
          }>;
        };
      }
    ).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => n.target.join(' ')),
    }));
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.targets.join(', ')}`);
}

/**
 * What reaches past the viewport's right edge: the page's scroll width, and each visible element
 * (outside the visually hidden ones: clipped to a box of 1 px) whose box ends beyond it, named by
 * tag, class and first text.
 */
export async function overflow(page: Page): Promise<{ scrollWidth: number; width: number; past: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const visuallyHidden = (el: Element) => {
      for (let at: Element | null = el; at; at = at.parentElement) {
        if (getComputedStyle(at).overflow === 'hidden' && at.getBoundingClientRect().width <= 1) return true;
      }
      return false;
    };
    const past: string[] = [];
    for (const el of document.querySelectorAll('body *')) {
      if (visuallyHidden(el)) continue;
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      if (box.right > width + 0.5 || box.left < -0.5) {
        past.push(`${el.tagName.toLowerCase()}.${el.className} ${(el.textContent ?? '').slice(0, 30)}`);
      }
    }
    return {
      scrollWidth: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth),
      width,
      past,
    };
  });
}

/** The text of the clipboard, as the page reads it. */
export function clipboardText(page: Page): Promise<string> {
  return page.evaluate(() => navigator.clipboard.readText());
}

/**
 * A download's content, as text: saved to a file of the test's own (Chromium shared over a connection
 * keeps its downloads on its side, where `download.path()` cannot reach).
 */
export async function downloadedText(download: Download): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), 'tollgate-download-')), 'file');
  await download.saveAs(file);
  return readFileSync(file, 'utf8');
}

/** The row of a table holding `text`. */
export function rowWith(page: Page, text: string): Locator {
  return page.getByRole('row').filter({ hasText: text });
}

/**
 * How the suite's Tollgate runs: on Postgres and Redis, or embedded (nothing configured: SQLite and
 * in-process counters).
 */
export type SuiteMode = 'redis-postgres' | 'embedded';

/** What a browser test file shares: a built Tollgate before a recording backend, and Chromium. */
export interface ConsoleSuite {
  readonly fleet: Fleet;
  readonly tollgate: Tollgate;
  readonly browser: Browser;
}

/**
 * Registers the hooks of the file (or of the enclosing describe): Tollgate (with `env` beside the
 * mode's own) and Chromium start before its tests (then `setup` runs, within `setupMs` in all) and stop
 * after.
 */
export function consoleSuite(
  setup: (tollgate: Tollgate) => Promise<void> = async () => {},
  setupMs = 120_000,
  env: Record<string, string> = {},
  mode: SuiteMode = 'redis-postgres',
): ConsoleSuite {
  const suite = {} as { fleet: Fleet; tollgate: Tollgate; browser: Browser };
  beforeAll(async () => {
    // Both are kept as they start, so afterAll stops the one that started when the other failed
    // (Chromium missing must not leave a Tollgate running).
    const [fleet, browser] = await Promise.allSettled([
      (mode === 'embedded' ? startEmbedded(env) : startFleet(1, env)).then((f) => (suite.fleet = f)),
      launchChromium().then((b) => (suite.browser = b)),
    ]);
    for (const started of [fleet, browser]) if (started.status === 'rejected') throw started.reason;
    suite.tollgate = suite.fleet.members[0]!;
    await setup(suite.tollgate);
  }, setupMs);
  afterAll(async () => {
    await suite.browser?.close();
    await suite.fleet?.stop();
  }, 60_000);
  return suite;
}

/**
 * Each test (of the enclosing describe) gets a fresh console tab signed in with `token()` (its time
 * `clock`'s when given, as in openConsole); after the test the tab must have met no unexpected error.
 */
export function signedInTab(
  suite: ConsoleSuite,
  token: () => string,
  clock?: () => number,
): { readonly session: ConsoleSession } {
  const tab = {} as { session: ConsoleSession };
  beforeEach(async () => {
    tab.session = await openConsole(suite.browser, suite.tollgate, '', clock);
    await signIn(tab.session, token());
  });
  afterEach(async () => {
    expect(unexpectedErrors(tab.session)).toEqual([]);
    await tab.session.context.close();
  });
  return tab;
}
