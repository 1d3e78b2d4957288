/** Closes the Chromium tests/browser/global-setup.ts started for the browser files. */
import type { BrowserServer } from 'playwright-core';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as typeof globalThis & { tollgateChromium?: BrowserServer }).tollgateChromium?.close();
}
