import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileClock } from './test-clock.js';

const file = () => join(mkdtempSync(join(tmpdir(), 'tg-clock-')), 'offset-ms');

describe('the test clock (TEST_CLOCK_FILE)', () => {
  it('is the wall clock plus the offset the file holds, read again at every call', () => {
    const path = file();
    const clock = fileClock(path);
    const before = Date.now();
    expect(clock() - before).toBeLessThan(1_000);
    writeFileSync(path, '86400000\n');
    const later = clock() - Date.now();
    expect(later).toBeGreaterThan(86_400_000 - 1_000);
    expect(later).toBeLessThanOrEqual(86_400_000);
  });

  it('keeps the last offset while the file is empty or half written, so time never steps back', () => {
    const path = file();
    const clock = fileClock(path);
    writeFileSync(path, '3600000');
    expect(clock() - Date.now()).toBeGreaterThan(3_599_000);
    writeFileSync(path, '');
    expect(clock() - Date.now()).toBeGreaterThan(3_599_000);
    writeFileSync(path, '36000');
    renameSync(path, path + '.gone');
    expect(clock() - Date.now()).toBeGreaterThan(3_599_000);
  });
});
