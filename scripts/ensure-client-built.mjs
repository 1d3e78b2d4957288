// `npm run tollgate` runs the built command; build @tollgate/client first only when its dist/ is missing
// or older than what it is built from: its sources, its schema, and the server's files copied or
// generated into it (client-copies.mjs, proxy-refusals.mjs). A build writes over dist/, never deletes
// it first, so a command already running beside it keeps its modules.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CLIENT_COPIES } from './client-copies.mjs';

const BUILT = 'packages/client/dist/bin/tollgate.js';
const SOURCES = [
  'packages/client/src',
  'packages/client/config-schema.json',
  'src/errors.ts',
  ...CLIENT_COPIES.map(({ source }) => source),
];

const newest = (path) =>
  statSync(path).isDirectory()
    ? readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), 0)
    : statSync(path).mtimeMs;

if (!existsSync(BUILT) || SOURCES.some((source) => newest(source) > statSync(BUILT).mtimeMs)) {
  const npm = process.env.npm_execpath;
  execFileSync(npm ? process.execPath : 'npm', [...(npm ? [npm] : []), 'run', '--silent', 'build:client'], {
    stdio: 'inherit',
  });
}
