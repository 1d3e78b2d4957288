/**
 * The console guide's screenshots (docs/guides/console.md; the files are in docs/images/), taken from
 * a built Tollgate with a few keys, plans, a consumer, routes, a webhook, a billing export and some real
 * traffic through a real backend: the key list, a key's usage, the fleet's failures and response times,
 * a consumer with its credits and usage, routes, webhooks, billing exports, admin tokens, a token's
 * own access and the audit log. Run by npm test like every other browser test, so the pictures show the
 * console as it is built.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { hit, waitFor } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { MINUTE_MS, TestClock } from '../helpers/test-clock.js';
import { consoleSuite, openConsole, signedInTab, signIn, visit } from './helpers/console-browser.js';

const IMAGES = resolve(import.meta.dirname, '../../docs/images');

let tollgate: Tollgate;
const keys: Record<string, { id: string; secret: string }> = {};
let consumerId = '';
let supportToken = '';
/** Tollgate's clock and the pages': moved to the start of a minute rather than waiting for one. */
const clock = new TestClock();

const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    const admin = tollgate.admin.bind(tollgate);
    await admin('POST', '/rate-limit/create', {
      rateLimitId: 'free',
      description: 'Free tier',
      limit: 20,
      period: 'minute',
    });
    await admin('POST', '/rate-limit/create', {
      rateLimitId: 'pro',
      description: 'Pro tier',
      limit: 45,
      period: 'minute',
    });
    const inAWeek = new Date(clock.now() + 7 * 86_400_000).toISOString().slice(0, 19) + 'Z';
    consumerId = (
      await admin('POST', '/tollgate/consumers', {
        name: 'Acme Corporation',
        externalId: 'cus_1001',
        metadata: { plan: 'business', region: 'eu' },
        credits: { remaining: 25_000, refill: { amount: 25_000, interval: 'month', dayOfMonth: 1 } },
      })
    ).body.consumerId;
    await admin('POST', '/tollgate/consumers', { name: 'Globex', externalId: 'cus_3003' });
    for (const [routeId, pathPrefix, methods] of [
      ['search', '/v1/search', ['GET']],
      ['reports', '/v1/reports', null],
    ] as const) {
      await admin('POST', '/tollgate/routes', {
        routeId,
        match: { pathPrefix, methods },
        upstreamUrl: suite.fleet.backend.url,
        timeoutMs: 5_000,
      });
    }
    await admin('POST', '/tollgate/webhooks', {
      url: 'http://127.0.0.1:9/hooks/billing-alerts',
      description: 'Billing alerts',
      events: ['key.created', 'key.expiring'],
    });
    await admin('POST', '/tollgate/billing-exports', {
      type: 'cloudevents',
      url: 'http://127.0.0.1:9/billing/events',
      eventName: 'api.requests',
      interval: 'hour',
      subject: 'consumer',
    });
    supportToken = (
      await admin('POST', '/tollgate/admin-tokens', {
        name: 'support-desk',
        scopes: ['keys:read', 'usage:read'],
      })
    ).body.secret;
    for (const body of [
      {
        name: 'mobile-app',
        rateLimitId: 'pro',
        externalId: 'cus_1001',
        metadata: { team: 'mobile', tier: 'pro' },
        consumerId,
      },
      { name: 'web-dashboard', rateLimitId: 'pro', externalId: 'cus_1001', consumerId },
      { name: 'partner-acme', rateLimitId: 'free', externalId: 'cus_2002' },
      { name: 'trial-globex', externalId: 'cus_3003', expiresAt: inAWeek },
      { name: 'legacy-batch' },
    ]) {
      const created = await admin('POST', '/consumer-api-key/create', body);
      expect(created.status).toBe(201);
      keys[body.name] = created.body;
    }
    const traffic: [string, string, string | undefined, number][] = [
      // 50 requests against 45 a minute: 3 backend errors first, 5 refused (429) at the end.
      ['mobile-app', '/v1/status/503', 'globex', 3],
      ['mobile-app', '/v1/orders', 'acme', 24],
      ['mobile-app', '/v1/orders/42', 'acme', 9],
      ['mobile-app', '/v1/catalog', 'globex', 14],
      ['web-dashboard', '/v1/reports', undefined, 12],
      ['partner-acme', '/v1/catalog', 'acme', 26],
      ['trial-globex', '/v1/catalog', 'globex', 4],
    ];
    // All of it within one minute window, so the 45-a-minute plan refuses exactly the last 5.
    clock.after(MINUTE_MS, 100);
    for (const [name, path, customer, count] of traffic) {
      for (let i = 0; i < count; i++)
        await hit(tollgate, keys[name]!.secret, path, customer ? { 'x-customer-id': customer } : {});
    }
    // A CI job's admin token changes a few keys: the audit log shows who did what.
    const ci = (await admin('POST', '/tollgate/admin-tokens', { name: 'ci-deploy', scopes: ['keys:write'] }))
      .body as { secret: string };
    const asCi = async (method: string, path: string, body: unknown) => {
      const res = await fetch(tollgate.url + path, {
        method,
        headers: { authorization: `Bearer ${ci.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
    };
    await asCi('POST', '/api-keys/apply-rate-limit', {
      consumerApiKeyId: keys['trial-globex']!.id,
      rateLimitId: 'free',
    });
    await asCi('POST', `/consumer-api-key/${keys['partner-acme']!.id}/roll`, { gracePeriodSeconds: 86_400 });
    await asCi('PATCH', `/consumer-api-key/${keys['legacy-batch']!.id}`, { enabled: false });
    await waitFor(
      async () =>
        (await admin('GET', `/consumer-api-key/${keys['mobile-app']!.id}`)).body.usage.totalRequests,
      (n) => n === 50,
    );
    await waitFor(
      async () => (await admin('GET', '/tollgate/usage')).body.topKeys.length,
      (n) => n === 4,
    );
    mkdirSync(IMAGES, { recursive: true });
  },
  120_000,
  clock.env,
);
const tab = signedInTab(
  suite,
  () => tollgate.rootToken,
  () => clock.now(),
);

/** A PNG written just now, of a real size. */
function expectPng(file: string): void {
  const bytes = readFileSync(file);
  expect(bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(
    true,
  );
  expect(bytes.length).toBeGreaterThan(20_000);
}

it('pictures the key list', async () => {
  await visit(tab.session, 'keys', 'Keys');
  await tab.session.page.waitForFunction(
    () => document.querySelectorAll('td.sparkline-cell svg').length === 5,
  );
  const file = join(IMAGES, 'console-keys.png');
  await tab.session.page.screenshot({ path: file, clip: { x: 0, y: 0, width: 1280, height: 520 } });
  expectPng(file);
});

it("pictures a key's usage over time", async () => {
  await visit(tab.session, `keys/${keys['mobile-app']!.id}?range=1h`, 'mobile-app');
  const usage = tab.session.page.getByRole('region', { name: 'Usage over time' });
  await usage.getByRole('button', { name: 'Requests: 50' }).waitFor();
  await usage.getByRole('button', { name: '429s: 5' }).waitFor();
  await usage.getByRole('cell', { name: '/v1/orders/42' }).waitFor();
  await usage.getByRole('cell', { name: 'globex' }).waitFor();
  const file = join(IMAGES, 'console-key-usage.png');
  await usage.screenshot({ path: file });
  expectPng(file);
});

it('pictures the audit log', async () => {
  await visit(tab.session, 'audit', 'Audit log');
  const rows = tab.session.page.locator('tbody tr[data-audit-id]');
  await rows.nth(6).waitFor();
  const file = join(IMAGES, 'console-audit-log.png');
  await tab.session.page.screenshot({ path: file, clip: { x: 0, y: 0, width: 1280, height: 760 } });
  expectPng(file);
});

it('pictures the fleet’s failures and response times', async () => {
  await visit(tab.session, '?range=1h', 'Overview');
  const { page } = tab.session;
  await page
    .getByRole('list', { name: 'Outcomes' })
    .getByRole('button', { name: /^Rate limited: [1-9]/ })
    .waitFor();
  await page.getByRole('list', { name: 'Percentiles' }).waitFor();
  const failures = page.locator('figure.chart').filter({ hasText: 'why requests failed' });
  const latency = page.locator('figure.chart').filter({ hasText: 'response times' });
  const top = (await failures.boundingBox())!;
  const bottom = (await latency.boundingBox())!;
  const file = join(IMAGES, 'console-failures-latency.png');
  await page.screenshot({
    path: file,
    clip: { x: 0, y: top.y - 60, width: 1280, height: bottom.y + bottom.height - top.y + 70 },
    fullPage: true,
  });
  expectPng(file);
});

it('pictures a consumer with its keys and usage', async () => {
  await visit(tab.session, `consumers/${consumerId}?range=1h`, 'Acme Corporation');
  const { page } = tab.session;
  await page
    .getByRole('region', { name: 'Usage over time' })
    .getByRole('list', { name: 'Series' })
    .getByRole('button', { name: 'Requests: 62' })
    .waitFor();
  const file = join(IMAGES, 'console-consumer.png');
  await page.screenshot({ path: file, clip: { x: 0, y: 0, width: 1280, height: 1100 }, fullPage: true });
  expectPng(file);
});

for (const [fragment, heading, ready, image] of [
  ['consumers', 'Consumers', 'Globex', 'console-consumers.png'],
  ['routes', 'Routes', 'reports', 'console-routes.png'],
  ['webhooks', 'Webhooks', 'Billing alerts', 'console-webhooks.png'],
  ['billing-exports', 'Billing exports', 'api.requests', 'console-billing-exports.png'],
  ['admin-tokens', 'Admin tokens', 'support-desk', 'console-admin-tokens.png'],
] as const) {
  it(`pictures the ${heading.toLowerCase()}`, async () => {
    await visit(tab.session, fragment, heading);
    await tab.session.page.getByRole('cell', { name: ready }).first().waitFor();
    const file = join(IMAGES, image);
    await tab.session.page.screenshot({ path: file, clip: { x: 0, y: 0, width: 1280, height: 560 } });
    expectPng(file);
  });
}

it('pictures a token’s own access, and a key’s page as that token sees it', async () => {
  const session = await openConsole(suite.browser, tollgate, '', () => clock.now());
  try {
    await signIn(session, supportToken);
    await visit(session, 'access', 'Your access');
    let file = join(IMAGES, 'console-access.png');
    await session.page.screenshot({ path: file, clip: { x: 0, y: 0, width: 1280, height: 720 } });
    expectPng(file);
    await visit(session, `keys/${keys['partner-acme']!.id}`, 'partner-acme');
    await session.page.getByRole('button', { name: 'Delete… (needs keys:write)' }).waitFor();
    file = join(IMAGES, 'console-key-read-only.png');
    await session.page.screenshot({ path: file, clip: { x: 0, y: 0, width: 1280, height: 560 } });
    expectPng(file);
  } finally {
    await session.context.close();
  }
});
