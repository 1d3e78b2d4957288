/**
 * The console's weight and origin as built by `npm run build`: at most 150 KB of JavaScript gzipped
 * (Preact, uPlot and the pages), and nothing in it that fetches from another origin at run time.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CONSOLE_DIR, consoleAssets } from './helpers/console-build.js';

const BUDGET_BYTES = 150 * 1024;

it('ships at most 150 KB of JavaScript, gzipped', () => {
  const scripts = consoleAssets().filter((a) => a.endsWith('.js'));
  expect(scripts.length).toBe(1);
  const gzipped = scripts.reduce(
    (sum, a) => sum + gzipSync(readFileSync(join(CONSOLE_DIR, a)), { level: 9 }).length,
    0,
  );
  expect(gzipped).toBeGreaterThan(10 * 1024);
  expect(gzipped).toBeLessThanOrEqual(BUDGET_BYTES);
});

it('names no other origin for the browser to fetch: no CDN, no font or image from elsewhere', () => {
  for (const asset of consoleAssets().filter((a) => /\.(js|css)$/.test(a))) {
    const text = readFileSync(join(CONSOLE_DIR, asset), 'utf8');
    // URLs a browser would load: CSS url(...) and @import, and script imports or fetches of absolute URLs.
    expect({
      asset,
      urls: [
        ...text.matchAll(
          /url\(\s*['"]?(?!data:)[^)'"]*['"]?\s*\)|@import|import\s*\(\s*['"]https?:|fetch\(\s*['"]https?:/g,
        ),
      ].map((m) => m[0]),
    }).toEqual({ asset, urls: [] });
  }
});
