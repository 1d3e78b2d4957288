/**
 * Debian's Chromium in its headless shell (`/usr/bin/chromium-headless-shell`, package
 * chromium-headless-shell, installed by .ci/run; no browser is ever downloaded) for the browser tests,
 * through playwright-core: one per run, shared by the files, or one per file. The shell is Chromium's
 * engine without the desktop browser around it, what Playwright itself runs for headless pages; it
 * spends well under half the CPU of the whole browser on the same tests
 * (docs/decisions/0133-browser-tests-in-chromiums-headless-shell.md).
 */
import { chromium, type Browser, type BrowserServer } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium-headless-shell';
/** Where tests/browser/global-setup.ts leaves the run's one Chromium (its WebSocket endpoint) for the files. */
export const SHARED_CHROMIUM = 'TOLLGATE_TEST_CHROMIUM';

/**
 * Headless, and quiet: nothing of Chromium's own (component updates, sync, QUIC probes) runs beside
 * the page. playwright-core gives every launch a fresh temporary --user-data-dir, removed on close.
 */
const LAUNCH = {
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
};

/** The Chromium the browser project's files share (tests/browser/global-setup.ts starts it). */
export function startSharedChromium(): Promise<BrowserServer> {
  return chromium.launchServer(LAUNCH);
}

/**
 * A Chromium for one file: a connection to the run's shared one when the browser project's global setup
 * started it (each file's pages live in their own contexts; `close` disconnects), else one of its own.
 */
export function launchChromium(): Promise<Browser> {
  const shared = process.env[SHARED_CHROMIUM];
  return shared ? chromium.connect(shared) : chromium.launch(LAUNCH);
}
