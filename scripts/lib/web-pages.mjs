// Builds one of Tollgate's web apps (the console, the portal) into dist/<app>: per page, one JavaScript
// and one CSS bundle named by their content hash (served with a year-long cache) and the page's HTML
// naming them (revalidated on every load). Nothing is fetched from outside the origin at run time.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * `source`: the app's folder (its favicon.svg, tsconfig.json and HTML pages); `out`: where it is built;
 * `pages`: each bundle's name, entry (below `source`) and HTML page (below `source`, written to `out`).
 * Returns the assets written, for the build's log line.
 */
export async function buildWebApp({ source, out, pages }) {
  const assets = join(out, 'assets');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(assets, { recursive: true });

  const icon = readFileSync(join(source, 'favicon.svg'));
  const iconName = `favicon-${createHash('sha256').update(icon).digest('hex').slice(0, 8).toUpperCase()}.svg`;
  copyFileSync(join(source, 'favicon.svg'), join(assets, iconName));

  const written = [];
  for (const { name, entry, html } of pages) {
    const result = await build({
      entryPoints: { [name]: join(source, entry) },
      bundle: true,
      minify: true,
      format: 'esm',
      // Current Chromium and Firefox: no down-levelling needed.
      target: ['es2023'],
      outdir: assets,
      entryNames: '[name]-[hash]',
      assetNames: '[name]-[hash]',
      jsx: 'automatic',
      jsxImportSource: 'preact',
      tsconfig: join(source, 'tsconfig.json'),
      metafile: true,
      legalComments: 'eof',
      logLevel: 'warning',
      // Bundled libraries (swagger-ui's React) drop their development checks.
      define: { 'process.env.NODE_ENV': '"production"' },
    });
    /** The hashed name esbuild gave the entry's output with this extension. */
    const output = (extension) => {
      const file = Object.keys(result.metafile.outputs).find((f) => f.endsWith(extension));
      if (!file) throw new Error(`${source}: no ${extension} output for ${name}`);
      return './' + relative(out, file).split('\\').join('/');
    };
    const text = readFileSync(join(source, html), 'utf8')
      .replace('%APP_JS%', output('.js'))
      .replace('%APP_CSS%', output('.css'))
      .replace('%FAVICON%', `./assets/${iconName}`);
    writeFileSync(join(out, html), text);
    written.push(output('.js'), output('.css'));
  }
  return [...written, `./assets/${iconName}`];
}
