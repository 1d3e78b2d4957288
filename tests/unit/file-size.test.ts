/**
 * No file in src/ over 400 lines (tests beside the code, *.test.ts, aside): a file that grows past it
 * holds more than one idea, and is split along them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const MAX_LINES = 400;

/** Lines of a text: as `wc -l` counts them, and a last line without its newline too. */
const linesOf = (text: string): number =>
  text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

/** Every file under src/ but the tests beside the code, as paths from the repository's root. */
const sourceFiles = (): string[] =>
  readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.test.ts'))
    .map((entry) => join(entry.parentPath, entry.name).slice(ROOT.length + 1))
    .sort();

/** The files over MAX_LINES, as `path: N lines`. */
const oversized = (files: readonly { path: string; text: string }[]): string[] =>
  files.flatMap(({ path, text }) => {
    const lines = linesOf(text);
    return lines > MAX_LINES ? [`${path}: ${lines} lines`] : [];
  });

it('counts lines and reports a file of 401 lines, not one of 400', () => {
  expect([linesOf(''), linesOf('a\n'), linesOf('a\nb'), linesOf('a\n\n')]).toEqual([0, 1, 2, 2]);
  const of = (lines: number) => 'x\n'.repeat(lines);
  expect(
    oversized([
      { path: 'src/a.ts', text: of(400) },
      { path: 'src/b.ts', text: of(401) },
      { path: 'src/c.ts', text: `${of(400)}last` },
    ]),
  ).toEqual(['src/b.ts: 401 lines', 'src/c.ts: 401 lines']);
});

it(`has no file in src/ over ${MAX_LINES} lines`, () => {
  const files = sourceFiles();
  expect(files).toEqual(expect.arrayContaining(['src/main.ts', 'src/usage/README.md']));
  expect(oversized(files.map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') })))).toEqual(
    [],
  );
});
