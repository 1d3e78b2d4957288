/**
 * Usage in the plan's unit, in Chromium against a built Tollgate: a plan of tokens whose backend
 * reports each call's tokens in a header, three calls (42 and 8 tokens reported, one reporting none,
 * which keeps its reservation of 10). The console's key and consumer details say what was charged in
 * tokens and that one request kept its reservation; the portal's usage page charts the range in
 * tokens and says the same.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '../helpers/poll.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { consoleSuite, signedInTab, unexpectedErrors, visit } from './helpers/console-browser.js';
import { openPortalFor, signedInPortal } from './helpers/portal-browser.js';

const PLAN = 'tokens-monthly';
/** 42 + 8 reported, and the reservation of 10 kept by the call that reported nothing. */
const CHARGED = '60 tokens';
const UNSETTLED = '1 request reported nothing readable and kept its reservation';

let tollgate: Tollgate;
let meter: Server;
let keyId = '';
let consumerId = '';

/** A backend that reports `?units=` in `x-units-used`, and nothing without it. */
async function startMeter(): Promise<string> {
  meter = createServer((req, res) => {
    const units = new URL(req.url!, 'http://meter').searchParams.get('units');
    res.writeHead(200, { 'content-type': 'text/plain', ...(units !== null && { 'x-units-used': units }) });
    res.end('ok');
  });
  await new Promise<void>((resolve) => meter.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(meter.address() as AddressInfo).port}`;
}

/** The three calls of `secret`, each read to its end (the answer's end settles it). */
async function threeCalls(secret: string): Promise<void> {
  for (const query of ['?units=42', '?units=8', '']) {
    const res = await fetch(`${tollgate.url}/v1/units${query}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(res.status).toBe(200);
    await res.text();
  }
}

const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    const route = await tollgate.admin('POST', '/tollgate/routes', {
      routeId: 'metered',
      match: { pathPrefix: '/v1/units' },
      upstreamUrl: await startMeter(),
    });
    expect(route.status).toBe(201);
    const plan = await tollgate.admin('POST', '/rate-limit/create', {
      rateLimitId: PLAN,
      limits: [{ name: 'tokens', limit: 1_000_000, period: 'month' }],
      costs: [{ match: { routeIds: ['metered'] }, cost: 10, settle: { header: 'x-units-used' } }],
      unit: 'tokens',
    });
    expect(plan.status).toBe(201);
    const own = await tollgate.admin('POST', '/consumer-api-key/create', {
      name: 'metered',
      rateLimitId: PLAN,
    });
    expect(own.status).toBe(201);
    keyId = own.body.id as string;
    consumerId = await openPortalFor(tollgate, 'Hooli');
    expect(
      (await tollgate.admin('PATCH', `/tollgate/consumers/${consumerId}`, { rateLimitId: PLAN })).status,
    ).toBe(200);
    const shared = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'shared', consumerId });
    expect(shared.status).toBe(201);
    await threeCalls(own.body.secret as string);
    await threeCalls(shared.body.secret as string);
    // Stored, so each page reads it once.
    for (const path of [`/consumer-api-key/${keyId}`, `/tollgate/consumers/${consumerId}`])
      await waitFor(
        () => tollgate.admin('GET', path),
        (d) => d.body.usage.totalRequests === 3,
      );
  },
  undefined,
  {},
  'embedded',
);
afterAll(() => new Promise<void>((resolve) => (meter ? meter.close(() => resolve()) : resolve())));

describe('the console', () => {
  const tab = signedInTab(suite, () => tollgate.rootToken);

  it.each([
    ['key', () => `keys/${keyId}`, 'metered'],
    ['consumer', () => `consumers/${consumerId}`, 'Hooli'],
  ])(
    "shows the %s's usage in its plan's unit, and the request that kept its reservation",
    async (_, fragment, name) => {
      await visit(tab.session, fragment(), name);
      const charged = tab.session.page.locator('.charged-usage');
      await charged.getByText(CHARGED).waitFor();
      expect(await charged.textContent()).toBe(`${CHARGED} (${UNSETTLED})`);
    },
  );
});

describe('the portal', () => {
  it('charts the range in tokens and says one request kept its reservation', async () => {
    const session = await signedInPortal(suite.browser, tollgate, consumerId);
    try {
      const { page } = session;
      await page.getByRole('link', { name: 'Usage' }).first().click();
      await page.getByText('Charged (tokens)').first().waitFor();
      expect(await page.locator('.unsettled-note').textContent()).toBe(`${UNSETTLED} in this range.`);
      expect(unexpectedErrors(session)).toEqual([]);
    } finally {
      await session.context.close();
    }
  });
});
