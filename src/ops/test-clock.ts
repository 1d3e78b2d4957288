import { readFileSync } from 'node:fs';

/**
 * The clock of a test process (TEST_CLOCK_FILE, refused with NODE_ENV=production): the wall clock plus
 * the offset in milliseconds the file holds, read again at every call, so a test moves every process
 * of a deployment to just before a second, minute, hour or UTC day boundary at once instead of
 * waiting for one (docs/decisions/0069-a-test-clock-for-the-processes-tests-start.md). A missing,
 * empty or half-written file keeps the last offset: time never steps back on a partial read.
 */
export function fileClock(path: string): () => number {
  let offsetMs = 0;
  return () => {
    try {
      const text = readFileSync(path, 'utf8').trim();
      if (/^-?\d+$/.test(text)) offsetMs = Number(text);
    } catch {
      // Not written yet: the offset so far.
    }
    return Date.now() + offsetMs;
  };
}
