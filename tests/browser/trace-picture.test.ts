/**
 * The picture of one trace in docs/guides/tracing.md (docs/images/trace-waterfall.png): a built
 * Tollgate with Redis + Postgres exports to a real OTLP receiver; one keyed request to a backend that
 * takes 25 ms; its spans, as the receiver decoded them, drawn as a waterfall page
 * (tests/browser/helpers/trace-waterfall.ts) and photographed in Chromium. Run by npm test like every
 * other browser test, so the picture shows the spans Tollgate sends today.
 */
import { resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { MODES, type Deployment } from '../e2e/helpers/modes.js';
import { startBackend, type Backend } from '../e2e/helpers/backend.js';
import { startTollgate, type Tollgate } from '../e2e/helpers/tollgate.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { waitFor } from '../helpers/poll.js';
import { launchChromium } from './helpers/chromium.js';
import { waterfallPage } from './helpers/trace-waterfall.js';

const PICTURE = resolve(import.meta.dirname, '../../docs/images/trace-waterfall.png');

let deployment: Deployment;
let backend: Backend;
let receiver: OtlpReceiver;
let tollgate: Tollgate;
let browser: Browser;

beforeAll(async () => {
  deployment = await MODES.find((m) => m.name.startsWith('Redis'))!.deploy();
  backend = await startBackend();
  receiver = await startOtlpReceiver();
  [tollgate, browser] = await Promise.all([
    startTollgate({
      ...deployment.env,
      UPSTREAM_URL: backend.url,
      DEFAULT_RATE_LIMIT: '1000/hour',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'tollgate',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    }),
    launchChromium(),
  ]);
});

afterAll(async () => {
  await browser?.close();
  await tollgate?.stop();
  await receiver?.close();
  await backend?.close();
  await deployment?.dispose();
});

it('draws one proxied request: the SERVER span, the wait on Redis, and the backend call', async () => {
  const { secret } = (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'reports-app' }))
    .body as { secret: string };
  const res = await fetch(`${tollgate.url}/v1/reports/slow/25?month=2026-11`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  expect(res.status).toBe(200);
  const { value: spans } = await waitFor(
    async () => {
      const server = receiver.spans.find(
        (s) => s.kind === 2 && s.attributes['url.path'] === '/v1/reports/slow/25',
      );
      return server === undefined ? [] : receiver.spans.filter((s) => s.traceId === server.traceId);
    },
    (found) => found.length === 3,
  );
  expect(spans).toHaveLength(3);

  const page = await browser.newPage({ viewport: { width: 1280, height: 240 } });
  try {
    await page.setContent(waterfallPage(spans));
    const rows = await page.locator('.row .kind').allTextContents();
    expect(rows).toEqual(['SERVER', 'INTERNAL', 'CLIENT']);
    await expect(page.locator('.row').nth(2).textContent()).resolves.toContain('/v1/reports/slow/25');
    await page.screenshot({ path: PICTURE, fullPage: true });
  } finally {
    await page.close();
  }
});
