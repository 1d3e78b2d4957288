/** The portal as `npm run build` left it in dist/portal (npm test builds first). */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const PORTAL_DIR = resolve(import.meta.dirname, '../../../dist/portal');

/** The assets a built page (`index.html`, `reference.html`) names, as `assets/<name>`. */
export function assetsOf(page: string): string[] {
  const html = readFileSync(join(PORTAL_DIR, page), 'utf8');
  return [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)].map((m) => m[1]!);
}

/** Every file the build wrote under assets/. */
export function portalAssets(): string[] {
  return readdirSync(join(PORTAL_DIR, 'assets')).map((name) => `assets/${name}`);
}
