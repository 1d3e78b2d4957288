// The registry this project installs from serves only the Linux builds of optional native packages
// (@swc/core-*, @unrs/resolver-binding-*). npm then leaves the other platforms' entries out of
// package-lock.json, and `npm ci` rejects the lock as incomplete. This adds a version-only entry for
// each missing optional dependency; npm skips them on this platform. Run after every `npm install`.
import { readFileSync, writeFileSync } from 'node:fs';
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const pk = lock.packages;
let added = 0;
for (const [path, e] of Object.entries(pk))
  for (const [name, range] of Object.entries(e.optionalDependencies ?? {})) {
    const base = path === '' ? '' : path + '/';
    if (!pk[`${base}node_modules/${name}`] && !pk[`node_modules/${name}`]) {
      pk[`node_modules/${name}`] = { version: range, dev: e.dev, optional: true };
      added++;
    }
  }
lock.packages = Object.fromEntries(
  Object.entries(pk).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
console.log(`package-lock.json: ${added} optional platform entries added`);
