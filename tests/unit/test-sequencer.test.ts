/**
 * The order of a fresh clone's run (tests/sequencer.js, docs/decisions/0110): with no Jest cache, the
 * longest files of tests/durations.json start first, and a file the table does not know starts before
 * them, as Jest's own rule runs files it has no figure for.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
/** The sequencer is plain JavaScript (Jest loads it without a transform): its shape as this test uses it. */
const SEQUENCER: string = '../sequencer.js';
const { default: LongestFirst } = (await import(SEQUENCER)) as {
  default: new (options: object) => { sort(tests: object[]): { path: string }[] };
};
const { seconds } = JSON.parse(readFileSync(resolve(ROOT, 'tests/durations.json'), 'utf8')) as {
  seconds: Record<string, number>;
};

/** A test file as Jest hands it to a sequencer, its project's cache off (a fresh clone has none). */
const testOf = (file: string) => ({
  path: resolve(ROOT, file),
  context: { config: { rootDir: ROOT, cache: false }, hasteFS: { getSize: () => 0 } },
});

it('starts the files the table says are longest first, and one it does not know before them', () => {
  const known = Object.keys(seconds);
  const [longest, shortest] = [known[0]!, known.at(-1)!];
  const between = known.find((f) => seconds[f]! < seconds[longest]! && seconds[f]! > seconds[shortest]!)!;
  const sample = [shortest, longest, between, 'tests/unit/new.test.ts'];
  const sequencer = new LongestFirst({ contexts: new Set(), globalConfig: {} });
  const order = sequencer.sort(sample.map(testOf)).map((t) => t.path.slice(ROOT.length + 1));
  expect(order).toEqual(['tests/unit/new.test.ts', longest, between, shortest]);
});
