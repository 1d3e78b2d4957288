// Builds the web console (console/) into dist/console (scripts/lib/web-pages.mjs): Preact and uPlot
// are bundled, so nothing is fetched from outside the origin at run time.
import { buildWebApp } from './lib/web-pages.mjs';

const OUT = 'dist/console';
const built = await buildWebApp({
  source: 'console',
  out: OUT,
  pages: [{ name: 'app', entry: 'src/main.tsx', html: 'index.html' }],
});
console.log(`console built into ${OUT}: ${built.join(', ')}`);
