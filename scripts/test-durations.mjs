// Writes tests/durations.json, the seconds each test file took, from a `jest --json --outputFile=…` run:
//   node scripts/test-durations.mjs run.json
// tests/sequencer.js starts the longest first; docs/performance.md ("Suite") reads the table.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const run = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const seconds = Object.fromEntries(
  run.testResults
    .map((file) => [relative(root, file.name), Math.round((file.endTime - file.startTime) / 100) / 10])
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b)),
);
writeFileSync(
  resolve(root, 'tests/durations.json'),
  JSON.stringify(
    { about: 'Seconds per test file of one run (scripts/test-durations.mjs)', seconds },
    null,
    2,
  ) + '\n',
);
