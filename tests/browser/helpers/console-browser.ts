/**
 * Driving the console in Debian's Chromium (`/usr/bin/chromium`, installed by .ci/run; no browser is
 * ever downloaded) with playwright-core. Each session records what a reviewer would want to know: every
 * request the page made, console errors, page errors and Content-Security-Policy violations.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { startFleet, type Fleet } from '../../e2e/helpers/replicas.js';
import type { Tollgate } from '../../e2e/helpers/tollgate.js';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless, and quiet: nothing of Chromium's own (component updates, sync, QUIC probes) runs beside
 * the page. playwright-core gives every launch a fresh temporary --user-data-dir, removed on close.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

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

/** A fresh browser context (its own session storage) on the console's page, not signed in yet. */
export async function openConsole(
  browser: Browser,
  tollgate: Tollgate,
  prefix = '',
): Promise<ConsoleSession> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: tollgate.url });
  const session: ConsoleSession = {
    context,
    page: await context.newPage(),
    consoleUrl: `${tollgate.url}${prefix}/tollgate/console/`,
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
  const { page } = session;
  page.setDefaultTimeout(20_000);
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

/** The text of the clipboard, as the page reads it. */
export function clipboardText(page: Page): Promise<string> {
  return page.evaluate(() => navigator.clipboard.readText());
}

/** The row of a table holding `text`. */
export function rowWith(page: Page, text: string): Locator {
  return page.getByRole('row').filter({ hasText: text });
}

/** What a browser test file shares: a built Tollgate on Postgres and Redis before a recording backend, and Chromium. */
export interface ConsoleSuite {
  readonly fleet: Fleet;
  readonly tollgate: Tollgate;
  readonly browser: Browser;
}

/**
 * Registers the file's hooks: Tollgate (with `env` beside the fleet's) and Chromium start before its
 * tests (then `setup` runs, within `setupMs` in all) and stop after.
 */
export function consoleSuite(
  setup: (tollgate: Tollgate) => Promise<void> = async () => {},
  setupMs = 120_000,
  env: Record<string, string> = {},
): ConsoleSuite {
  const suite = {} as { fleet: Fleet; tollgate: Tollgate; browser: Browser };
  beforeAll(async () => {
    // Both are kept as they start, so afterAll stops the one that started when the other failed
    // (Chromium missing must not leave a Tollgate running).
    const [fleet, browser] = await Promise.allSettled([
      startFleet(1, env).then((f) => (suite.fleet = f)),
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
 * Each test (of the enclosing describe) gets a fresh console tab signed in with `token()`; after the
 * test the tab must have met no unexpected error.
 */
export function signedInTab(suite: ConsoleSuite, token: () => string): { readonly session: ConsoleSession } {
  const tab = {} as { session: ConsoleSession };
  beforeEach(async () => {
    tab.session = await openConsole(suite.browser, suite.tollgate);
    await signIn(tab.session, token());
  });
  afterEach(async () => {
    expect(unexpectedErrors(tab.session)).toEqual([]);
    await tab.session.context.close();
  });
  return tab;
}
