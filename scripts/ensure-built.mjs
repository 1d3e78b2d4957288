// `npm start` runs the built server; build first when dist/ is missing or older than any source file:
// the server from src/ (tsc, then one bundle of it: scripts/bundle-server.mjs), the console from
// console/ (scripts/build-console.mjs; it takes a list of periods from src/ too), the portal from
// portal/ (scripts/build-portal.mjs; it shares console/'s parts).
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce((max, e) => {
    const p = join(dir, e.name);
    return Math.max(max, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }, 0);
const stale = (output, ...sources) =>
  !existsSync(output) || sources.some((dir) => statSync(output).mtimeMs < newest(dir));

if (stale('dist/src/main.js', 'src')) {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    stdio: 'inherit',
  });
  execFileSync(process.execPath, ['scripts/bundle-server.mjs'], { stdio: 'inherit' });
}
if (stale('dist/console/index.html', 'console', 'src')) {
  execFileSync(process.execPath, ['scripts/build-console.mjs'], { stdio: 'inherit' });
}
if (stale('dist/portal/index.html', 'portal', 'console', 'src')) {
  execFileSync(process.execPath, ['scripts/build-portal.mjs'], { stdio: 'inherit' });
}
