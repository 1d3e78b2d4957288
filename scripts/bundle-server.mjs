// Bundles the server into dist/src/main.js, in place of tsc's entry module, so that a start loads one
// module instead of hundreds: Node's ES module loader was about half of a start's CPU
// (docs/decisions/0132-the-server-starts-from-one-bundle.md). tsc's other modules stay in dist/src for
// the scripts and benches that import them one by one. What start-up imports only when configured
// (Postgres, Redis, tracing) stays in chunks of its own, loaded as before only when used.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';

const OUT = 'dist/src';
rmSync(`${OUT}/chunks`, { recursive: true, force: true });
await build({
  entryPoints: ['src/main.ts'],
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  tsconfig: 'tsconfig.build.json',
  outdir: OUT,
  entryNames: '[name]',
  chunkNames: 'chunks/[name]-[hash]',
  allowOverwrite: true,
  // Optional packages: an install may leave them out, and the code that imports them says so then.
  external: ['@electric-sql/pglite', 'kysely-pglite-dialect', 'pg-native'],
  // CommonJS packages bundled into an ES module still call require() and read __dirname.
  banner: {
    js: [
      "import { createRequire as __bundleRequire } from 'node:module';",
      "import { dirname as __bundleDirname } from 'node:path';",
      "import { fileURLToPath as __bundleFileURLToPath } from 'node:url';",
      'const require = __bundleRequire(import.meta.url);',
      'const __filename = __bundleFileURLToPath(import.meta.url);',
      'const __dirname = __bundleDirname(__filename);',
    ].join('\n'),
  },
  sourcemap: 'linked',
  legalComments: 'none',
  // Without the packages' comments and indentation the bundle is about 30 % smaller, and ASCII: one
  // typographic apostrophe in a comment made V8 hold the whole source as a two-byte string. Names stay
  // as written, so stack traces read as before.
  minifyWhitespace: true,
  logLevel: 'warning',
});
console.log(`server bundled into ${OUT}/main.js`);
