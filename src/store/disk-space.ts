import { existsSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * A fresh embedded database takes about 200 KiB (its WAL included). With less free than this, a
 * failed start is the disk's doing whatever the error says.
 */
const ROOM_TO_START = 1024 * 1024;

/** Free bytes for an unprivileged writer on the filesystem that holds `dir` (or its nearest existing parent). */
export function freeBytes(dir: string): number | undefined {
  let at = dir;
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  try {
    const stats = statfsSync(at);
    return stats.bavail * stats.bsize;
  } catch {
    return undefined;
  }
}

/** PGlite's file system (read by upgrade-data-dir only) throws Emscripten's ErrnoError; 51 is its ENOSPC. */
const EMSCRIPTEN_ENOSPC = 51;

interface Failure {
  readonly code?: unknown;
  readonly errno?: unknown;
  readonly name?: unknown;
  readonly message?: unknown;
  readonly cause?: unknown;
}

/** ENOSPC from Node or PGlite, SQLSTATE 53100 (disk_full; SQLite's SQLITE_FULL too) anywhere in the cause chain. */
function outOfSpace(err: unknown): boolean {
  let e = err;
  for (let depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    const { code, errno, name, cause } = e as Failure;
    if (code === 'ENOSPC' || code === '53100' || (name === 'ErrnoError' && errno === EMSCRIPTEN_ENOSPC))
      return true;
    e = cause;
  }
  return false;
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err !== 'object' || err === null) return String(err);
  const { name, errno, message } = err as Failure;
  if (typeof message === 'string') return message;
  return `${String(name ?? 'unknown error')}${errno === undefined ? '' : ` errno ${String(errno)}`}`;
}

/**
 * What an operator needs from a failed embedded start: a full disk said as such, with DATA_DIR and the
 * space left; any other failure with DATA_DIR named, since everything embedded mode keeps is there.
 */
export function embeddedStartFailure(dataDir: string, err: unknown): string {
  const message = describe(err);
  const free = freeBytes(dataDir);
  if (outOfSpace(err) || (free !== undefined && free < ROOM_TO_START && !message.includes(dataDir))) {
    const left = free === undefined ? 'unknown space' : `${(free / 1024 / 1024).toFixed(1)} MiB`;
    return (
      `the disk holding DATA_DIR ${dataDir} is full (${left} free; a new embedded database takes about 200 KiB): ` +
      `free space there or set DATA_DIR to a folder on a larger disk (cause: ${message})`
    );
  }
  return message.includes(dataDir) ? message : `${message} (DATA_DIR ${dataDir})`;
}
