/**
 * One Chromium for every browser file of the run instead of one per file: each file connects to it
 * (tests/browser/helpers/chromium.ts launchChromium) and opens its own contexts, so no cookie,
 * storage or permission passes from one file to another. Jest workers inherit the variable set here.
 */
import { SHARED_CHROMIUM, startSharedChromium } from './helpers/chromium.ts';

export default async function globalSetup(): Promise<void> {
  const server = await startSharedChromium();
  process.env[SHARED_CHROMIUM] = server.wsEndpoint();
  (globalThis as typeof globalThis & { tollgateChromium?: typeof server }).tollgateChromium = server;
}
