/**
 * The developer portal in Chromium (docs/guides/portal.md): a team's portal turned on and branded
 * through the management API, a customer's consumer with public plans, and a tab signed in the way a
 * customer is, by opening the sign-in link the team's backend minted.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { Tollgate } from '../../e2e/helpers/tollgate.js';
import { openTab, type ConsoleSession } from './console-browser.js';

export const PORTAL = '/tollgate/portal';

/** The team's portal as the tests brand it: an accent colour of their own, two public plans. */
export const BRAND = { title: 'Acme Weather API', accentColor: '#0f766e' } as const;
export const PLANS = { basic: 'portal-basic', pro: 'portal-pro' } as const;

/** A small OpenAPI document: one operation, served through the gateway's catch-all. */
export const REFERENCE_DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'Acme Weather', version: '1.0.0', description: 'Forecasts by city.' },
  servers: [{ url: 'https://api.acme.example/v1' }],
  paths: {
    '/forecast': {
      get: {
        summary: 'The forecast for a city',
        parameters: [{ name: 'city', in: 'query', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'The forecast' } },
      },
    },
  },
};

/** Turns the portal on with the tests' brand, plans and reference; answers the consumer's id. */
export async function openPortalFor(tollgate: Tollgate, consumerName: string): Promise<string> {
  for (const [id, limit] of [
    [PLANS.basic, 1000],
    [PLANS.pro, 100_000],
  ] as const) {
    const plan = await tollgate.admin('POST', '/rate-limit/create', {
      rateLimitId: id,
      description: id === PLANS.basic ? 'Basic' : 'Pro',
      limit,
      period: 'day',
    });
    expect([201, 409]).toContain(plan.status);
  }
  const settings = await tollgate.admin('PATCH', `${PORTAL}/settings`, {
    enabled: true,
    ...BRAND,
    supportUrl: 'https://acme.example/support',
    maxKeysPerConsumer: 10,
    publicPlans: [PLANS.basic, PLANS.pro],
    apiReference: { document: REFERENCE_DOCUMENT },
  });
  expect(settings.status).toBe(200);
  const consumer = await tollgate.admin('POST', '/tollgate/consumers', {
    name: consumerName,
    rateLimitId: PLANS.basic,
    credits: { remaining: 5000 },
  });
  expect(consumer.status).toBe(201);
  return consumer.body.consumerId as string;
}

/** A sign-in link for a user of the consumer, as the team's backend mints it. */
export async function signInLink(
  tollgate: Tollgate,
  consumerId: string,
  user = { id: 'user-1', email: 'ada@customer.example' },
): Promise<string> {
  const session = await tollgate.admin('POST', `${PORTAL}/sessions`, { consumerId, user });
  expect(session.status).toBe(201);
  return new URL(session.body.url as string, tollgate.url).href;
}

/** A fresh tab signed in through a new sign-in link, on the keys page. */
export async function signedInPortal(
  browser: Browser,
  tollgate: Tollgate,
  consumerId: string,
  width = 1280,
): Promise<ConsoleSession> {
  const session = await openTab(browser, tollgate, await signInLink(tollgate, consumerId));
  await session.page.setViewportSize({ width, height: 900 });
  await session.page.getByRole('heading', { level: 1, name: 'Your keys' }).waitFor();
  return session;
}

const IMAGES = resolve(import.meta.dirname, '../../../docs/images');

/** Saves the page as the guide shows it: `docs/images/portal-<name>.png`. */
export async function guideScreenshot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<void> {
  mkdirSync(IMAGES, { recursive: true });
  await page.screenshot({ path: join(IMAGES, `portal-${name}.png`), ...options });
}
