// `npm run tollgate` runs the built command; build @tollgate/client first only when its dist/ is missing
// or older than what it is built from: its sources, its schema, and the server's files copied or
// generated into it (client-copies.mjs, proxy-refusals.mjs). One command builds at a time (a lock file),
// into a directory of its own whose files are then renamed over dist/, the command's own file last: a
// command running beside a build reads each module whole, old or new, never half written.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  openSync,
  closeSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { CLIENT_COPIES } from './client-copies.mjs';

const DIST = 'packages/client/dist';
const BUILT = `${DIST}/bin/tollgate.js`;
const LOCK = 'packages/client/.build.lock';
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

const outOfDate = () =>
  !existsSync(BUILT) || SOURCES.some((source) => newest(source) > statSync(BUILT).mtimeMs);

const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
};

/** Holds the lock file; one left by a command that died is taken over. */
function lock() {
  for (;;) {
    try {
      const fd = openSync(LOCK, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const holder = Number(readFileSync(LOCK, { encoding: 'utf8', flag: 'a+' }));
    if (holder && !alive(holder)) rmSync(LOCK, { force: true });
    else pause(100);
  }
}

const filesUnder = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );

function build() {
  const staging = `${DIST}.${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  try {
    for (const script of ['scripts/generate-proxy-refusals.mjs', 'scripts/generate-client-copies.mjs']) {
      execFileSync(process.execPath, [script], { stdio: 'inherit' });
    }
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', 'packages/client/tsconfig.json', '--outDir', staging], {
      stdio: 'inherit',
    });
    const files = filesUnder(staging).sort(
      (a, b) => (a.endsWith('bin/tollgate.js') ? 1 : 0) - (b.endsWith('bin/tollgate.js') ? 1 : 0),
    );
    for (const file of files) {
      const target = join(DIST, relative(staging, file));
      mkdirSync(dirname(target), { recursive: true });
      renameSync(file, target);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (outOfDate()) {
  lock();
  try {
    if (outOfDate()) build();
  } finally {
    unlinkSync(LOCK);
  }
}
