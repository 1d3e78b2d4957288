// Longest files first, on a fresh clone too: Jest orders files by the durations its cache holds from the
// last run and, with no cache (CI's fresh clone), by file size, which put the fault proofs of minutes
// last and left one worker running them alone. tests/durations.json (scripts/test-durations.mjs writes
// it from a `jest --json` run) stands in for the cache where it has no figure; README "Tests".
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import Sequencer from '@jest/test-sequencer';

const KNOWN = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8')).seconds;

export default class LongestFirst extends Sequencer {
  time(test) {
    // A file in neither (new since the table was written) has no figure: Jest runs those first, by size.
    const seconds = KNOWN[relative(test.context.config.rootDir, test.path)];
    return super.time(test) ?? (seconds === undefined ? undefined : seconds * 1000);
  }
}
