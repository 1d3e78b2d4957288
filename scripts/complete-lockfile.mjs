// npm leaves the optional native packages of other platforms (@swc/core-*, @unrs/resolver-binding-*)
// out of package-lock.json when it installs on one platform, and `npm ci` then rejects the lock as
// incomplete. This adds an entry for each missing optional dependency and completes any entry that
// holds only a version, with the registry's integrity and platform fields: without `os`
// and `cpu`, `npm ci` installed every platform's binaries here, not only this one's. Run after every
// `npm install`; on a complete lock it changes nothing and asks the registry nothing.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const pk = lock.packages;

/** The registry's manifest fields a lock entry of `name` at `version` (a version or a range) holds. */
function registryEntry(name, version) {
  const fields = ['version', 'os', 'cpu', 'libc', 'dist.integrity'];
  const answer = JSON.parse(
    execFileSync('npm', ['view', `${name}@${version}`, ...fields, '--json'], { encoding: 'utf8' }),
  );
  // A range that several versions satisfy answers one object per version, oldest first.
  const manifest = Array.isArray(answer) ? answer.at(-1) : answer;
  const entry = { version: manifest.version, integrity: manifest['dist.integrity'] };
  for (const field of ['os', 'cpu', 'libc'])
    if (manifest[field] !== undefined) entry[field] = manifest[field];
  return entry;
}

let completed = 0;
for (const [path, e] of Object.entries(pk))
  for (const [name, range] of Object.entries(e.optionalDependencies ?? {})) {
    const base = path === '' ? '' : path + '/';
    if (!pk[`${base}node_modules/${name}`] && !pk[`node_modules/${name}`])
      pk[`node_modules/${name}`] = { version: range, dev: e.dev, optional: true };
  }
for (const [path, e] of Object.entries(pk))
  if (path !== '' && e.optional && e.integrity === undefined && e.link !== true) {
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    pk[path] = { ...registryEntry(name, e.version), ...(e.dev ? { dev: true } : {}), optional: true };
    completed++;
  }
lock.packages = Object.fromEntries(
  Object.entries(pk).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
console.log(`package-lock.json: ${completed} optional entries completed from the registry`);
