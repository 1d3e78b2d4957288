// Builds the web console (console/) into dist/console: one JavaScript and one CSS bundle named by
// their content hash (served with a year-long cache), and index.html, which names them (revalidated
// on every load). Nothing is fetched from outside the origin at run time: Preact and uPlot are bundled.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';

const SOURCE = 'console';
const OUT = 'dist/console';
const ASSETS = join(OUT, 'assets');

rmSync(OUT, { recursive: true, force: true });
mkdirSync(ASSETS, { recursive: true });

const result = await build({
  entryPoints: { app: join(SOURCE, 'src/main.tsx') },
  bundle: true,
  minify: true,
  format: 'esm',
  // Current Chromium and Firefox: no down-levelling needed.
  target: ['es2023'],
  outdir: ASSETS,
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: join(SOURCE, 'tsconfig.json'),
  metafile: true,
  legalComments: 'eof',
  logLevel: 'warning',
});

/** The hashed name esbuild gave the entry's output with this extension. */
const output = (extension) => {
  const name = Object.keys(result.metafile.outputs).find((file) => file.endsWith(extension));
  if (!name) throw new Error(`build-console: no ${extension} output`);
  return './' + relative(OUT, name).split('\\').join('/');
};

const icon = readFileSync(join(SOURCE, 'favicon.svg'));
const iconName = `favicon-${createHash('sha256').update(icon).digest('hex').slice(0, 8).toUpperCase()}.svg`;
copyFileSync(join(SOURCE, 'favicon.svg'), join(ASSETS, iconName));

const page = readFileSync(join(SOURCE, 'index.html'), 'utf8')
  .replace('%APP_JS%', output('.js'))
  .replace('%APP_CSS%', output('.css'))
  .replace('%FAVICON%', `./assets/${iconName}`);
writeFileSync(join(OUT, 'index.html'), page);
console.log(`console built into ${OUT}: ${[output('.js'), output('.css'), basename(iconName)].join(', ')}`);
