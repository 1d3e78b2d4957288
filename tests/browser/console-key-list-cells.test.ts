/**
 * The console's key list at a laptop's and a wide screen's width (1280 and 1920 px), in Chromium
 * against a built Tollgate (issue 51): one-word cells stay on one line (a plan id with a hyphen, the
 * status, the last use, the creation date, a sparkline's count of three digits) while a long external
 * id is the one that wraps. Each cell's lines are counted from the boxes its text is laid out in.
 */
import type { Page } from 'playwright-core';
import { hit } from '../e2e/helpers/replicas.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';
import { consoleSuite, signedInTab, visit } from './helpers/console-browser.js';

const REQUESTS = 120;
/** An owner's reference as long as a CRM writes them: longer than any one line of its column. */
const EXTERNAL_ID =
  'crm-account-7f3a9c2e-0b4d-4e8f-9a1c-5d6e7f8091a2/'.repeat(3) + 'billing-reference-north-east';

let tollgate: Tollgate;

const suite = consoleSuite(
  async (started) => {
    tollgate = started;
    const plan = await tollgate.admin('POST', '/rate-limit/create', {
      rateLimitId: 'enterprise-annual',
      limit: 100_000,
      period: 'day',
    });
    expect(plan.status).toBe(201);
    for (const name of ['billing-sync', 'nightly-import']) {
      const key = await tollgate.admin('POST', '/consumer-api-key/create', {
        name,
        rateLimitId: 'enterprise-annual',
        externalId: EXTERNAL_ID,
      });
      expect(key.status).toBe(201);
      for (let i = 0; i < REQUESTS; i += 20)
        await Promise.all(Array.from({ length: 20 }, () => hit(tollgate, key.body.secret as string)));
    }
  },
  undefined,
  {},
  'embedded',
);
const tab = signedInTab(suite, () => tollgate.rootToken);

/** How many lines the longest-broken text of each cell of the first row takes, by its column's label. */
function linesOfFirstRow(page: Page): Promise<Record<string, number>> {
  return page.evaluate(() => {
    const row = document.querySelector('table.keys tbody tr')!;
    const lines: Record<string, number> = {};
    for (const cell of row.querySelectorAll('td')) {
      const texts = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      let most = 0;
      for (let text = texts.nextNode(); text !== null; text = texts.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(text);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top / 4)));
        most = Math.max(most, tops.size);
      }
      lines[cell.dataset.label!] = most;
    }
    return lines;
  });
}

it.each([1280, 1920])(
  'keeps one-word cells on one line at %i px, the external id wrapping instead',
  async (width) => {
    const { page } = tab.session;
    await page.setViewportSize({ width, height: 900 });
    await visit(tab.session, 'keys', 'Keys');
    await page.locator('table.keys tbody tr .sparkline-total').first().getByText(String(REQUESTS)).waitFor();
    const lines = await linesOfFirstRow(page);
    expect(lines).toMatchObject({ Status: 1, Plan: 1, 'Last used': 1, Created: 1, 'Last 24 hours': 1 });
    // The long id gives way rather than the others, and the table keeps to the page.
    expect(lines['External ID']).toBeGreaterThan(1);
    const fits = await page
      .locator('table.keys')
      .evaluate((table) => table.getBoundingClientRect().right <= document.documentElement.clientWidth);
    expect(fits).toBe(true);
  },
);
