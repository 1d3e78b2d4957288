/**
 * The portal's weight and origin as built by `npm run build`: its pages' JavaScript at most 150 KB
 * gzipped (Preact, uPlot, the pages) without the API reference's renderer, which only the reference
 * page names; and nothing in any of it that fetches from another origin at run time.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { assetsOf, PORTAL_DIR, portalAssets } from './helpers/portal-build.js';

const BUDGET_BYTES = 150 * 1024;

const gzipped = (asset: string) => gzipSync(readFileSync(join(PORTAL_DIR, asset)), { level: 9 }).length;

it('ships at most 150 KB of JavaScript gzipped to every page but the reference, and swagger-ui only there', () => {
  const scripts = assetsOf('index.html').filter((a) => a.endsWith('.js'));
  expect(scripts.length).toBe(1);
  const size = scripts.reduce((sum, a) => sum + gzipped(a), 0);
  expect(size).toBeGreaterThan(10 * 1024);
  expect(size).toBeLessThanOrEqual(BUDGET_BYTES);
  const pages = readFileSync(join(PORTAL_DIR, scripts[0]!), 'utf8');
  expect(pages).not.toContain('swagger-ui');
  const reference = assetsOf('reference.html').filter((a) => a.endsWith('.js'));
  expect(reference.length).toBe(1);
  expect(readFileSync(join(PORTAL_DIR, reference[0]!), 'utf8')).toContain('swagger-ui');
});

it('names no other origin for the browser to fetch: no CDN, no font or image from elsewhere', () => {
  for (const asset of portalAssets().filter((a) => /\.(js|css)$/.test(a))) {
    const text = readFileSync(join(PORTAL_DIR, asset), 'utf8');
    // Stylesheets: url(...) but data: and @import. Scripts: imports or fetches of absolute URLs (swagger-ui's
    // own `url()` calls are functions, not resources).
    const loads = asset.endsWith('.css')
      ? /url\(\s*['"]?(?!data:)[^)'"]*['"]?\s*\)|@import/g
      : /import\s*\(\s*['"]https?:|fetch\(\s*['"]https?:/g;
    expect({ asset, urls: [...text.matchAll(loads)].map((m) => m[0]) }).toEqual({ asset, urls: [] });
  }
});
