import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The directory that holds Tollgate's package.json, and so sql/ and dist/: found by walking up, since
 * the code runs from src/ (the tests), from tsc's modules in dist/src/ and from the one bundle the
 * build makes of them (dist/src/main.js, scripts/bundle-server.mjs), each at another depth.
 */
function packageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const PACKAGE_ROOT = packageRoot(import.meta.dirname);
