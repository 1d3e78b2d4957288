/** The console as `npm run build` left it in dist/console (npm test builds first). */
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const CONSOLE_DIR = resolve(import.meta.dirname, '../../../dist/console');

/** Every file the build wrote under assets/, as `assets/<name>`. */
export function consoleAssets(): string[] {
  return readdirSync(join(CONSOLE_DIR, 'assets')).map((name) => `assets/${name}`);
}
