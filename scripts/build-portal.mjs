// Builds the developer portal (portal/) into dist/portal as the console is built
// (scripts/lib/web-pages.mjs). Two pages, two bundles: the portal's (Preact, uPlot, the pages) and the
// API reference's (swagger-ui), which only the reference page loads.
import { buildWebApp } from './lib/web-pages.mjs';

const OUT = 'dist/portal';
const built = await buildWebApp({
  source: 'portal',
  out: OUT,
  pages: [
    { name: 'portal', entry: 'src/main.tsx', html: 'index.html' },
    { name: 'reference', entry: 'src/reference/main.tsx', html: 'reference.html' },
  ],
});
console.log(`portal built into ${OUT}: ${built.join(', ')}`);
