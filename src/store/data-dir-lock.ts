import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Embedded mode is one process per DATA_DIR: its store takes no row or advisory locks
 * (src/store/sqlite-sql.ts) and its usage journal is one file. A pid file refuses a second process (a
 * server, or a command: rotate-secrets, upgrade-data-dir) with a clear message; a stale one (its
 * process is gone) is taken over.
 */
export function holdDataDirLock(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'tollgate.pid');
  for (;;) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(file, 'utf8'));
      if (holder && holder !== process.pid && alive(holder)) {
        throw new Error(
          `DATA_DIR ${dataDir} is in use by process ${holder}; embedded mode runs one process per folder`,
          {
            cause: err,
          },
        );
      }
      unlinkSync(file);
    }
  }
  process.on('exit', () => {
    try {
      unlinkSync(file);
    } catch {
      // Already gone: nothing to release.
    }
  });
}
