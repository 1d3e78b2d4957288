import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SECOND_MS = 1_000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/**
 * The clock of Tollgate processes a test starts (TEST_CLOCK_FILE, src/ops/test-clock.ts): the wall clock
 * plus an offset this writes to a file every process of the deployment reads. A test moves it forward to
 * just before a second, minute, hour or UTC day boundary instead of waiting for one; it never moves back.
 */
export class TestClock {
  readonly file: string;
  private offsetMs = 0;

  constructor() {
    this.file = join(mkdtempSync(join(tmpdir(), 'tollgate-clock-')), 'offset-ms');
    this.write();
  }

  /** For the processes' environment. */
  get env(): { TEST_CLOCK_FILE: string } {
    return { TEST_CLOCK_FILE: this.file };
  }

  /** What the processes' clock reads now. */
  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** Moves the clock forward by `ms`. */
  advance(ms: number): void {
    if (ms < 0) throw new Error('the test clock only moves forward');
    this.offsetMs += ms;
    this.write();
  }

  /**
   * Moves the clock to `leadMs` before the next UTC boundary of `periodMs` (a second, minute, hour or
   * day) that is at least `leadMs` away, and returns that boundary.
   */
  before(periodMs: number, leadMs: number): number {
    const now = this.now();
    const boundary = (Math.floor((now + leadMs) / periodMs) + 1) * periodMs;
    this.advance(boundary - leadMs - now);
    return boundary;
  }

  /** Moves the clock to `ms` after the next UTC boundary of `periodMs`, and returns that boundary. */
  after(periodMs: number, ms: number): number {
    const boundary = this.before(periodMs, 0);
    this.advance(ms);
    return boundary;
  }

  /** Whole or not at all: a process reading it mid-write must not see an empty file. */
  private write(): void {
    writeFileSync(this.file + '.next', String(this.offsetMs));
    renameSync(this.file + '.next', this.file);
  }
}
