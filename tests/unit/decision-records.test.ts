/**
 * The decision records cite only files and names that exist, so a reader can open what a record
 * talks about; so do the architecture notes (docs/architecture.md and the READMEs that open folders of
 * src/), which follow the same convention. What is checked (the convention is written down in docs/decisions/README.md):
 *
 * - a path from the repository's root in backticks or as a link target (`src/…`, `tests/…`, `docs/…`,
 *   `scripts/…`, `sql/…`, `packages/…`, `console/…`, `bench/…`, `k8s/…`, `ops/…`) names a file or a
 *   folder that exists; a `*` in it must match at least one file;
 * - a name cited with its file, as "`src/limits/rate-limiter.ts`'s `RateLimiter`", "`RateLimiter`
 *   (`src/limits/rate-limiter.ts`)", "`RateLimiter` in `src/limits/rate-limiter.ts`" or
 *   "`src/limits/rate-limiter.ts` (`RateLimiter`)", is declared at
 *   the top level of that file (exported, or a config file's constant); a member after a dot
 *   (`RateLimiter.consume()`) appears in that file too.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const DECISIONS = join(ROOT, 'docs/decisions');

const RECORDS = readdirSync(DECISIONS).filter((f) => /^\d{4}-.*\.md$/.test(f));

const ROOTS = ['src', 'tests', 'docs', 'scripts', 'sql', 'packages', 'console', 'bench', 'k8s', 'ops'];
const PATH = new RegExp(`^(?:\\.\\./\\.\\./)?((?:${ROOTS.join('|')})/[^\\s#:]*)`);
const NAME = String.raw`[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?`;
const CITED_PATH = String.raw`[a-z][\w./-]*\.[a-z]+`;
/** The ways a record names something in a file: the file's `name`, `name` (file), `name` in file, file (`name`). */
const NAMED_IN_FILE = [
  new RegExp(`\`(?<path>${CITED_PATH})\`'s \`(?<name>${NAME})\``, 'g'),
  new RegExp(`\`(?<name>${NAME})\` \\(\`(?<path>${CITED_PATH})\`\\)`, 'g'),
  new RegExp(`\`(?<name>${NAME})\` in \`(?<path>${CITED_PATH})\``, 'g'),
  new RegExp(`\`(?<path>${CITED_PATH})\`\\*{0,2} \\(\`(?<name>${NAME})\`\\)`, 'g'),
];

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).map((f) => `${dir}/${f}`);
}

/**
 * Whether `path` (from the root, perhaps with a `*` or a `<placeholder>` segment, as in
 * `src/management/resources/<resource>/`) names something in the repository.
 */
function exists(cited: string): boolean {
  const path = cited.replace(/<[\w-]+>/g, '*');
  if (!path.includes('*')) return existsSync(join(ROOT, path));
  const top = path.slice(0, path.indexOf('*')).replace(/\/[^/]*$/, '');
  const pattern = new RegExp(`^${path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
  return filesUnder(top).some((f) => pattern.test(f) || pattern.test(f + '/'));
}

/** The paths a record cites that name nothing in the repository. */
function missingPaths(markdown: string): string[] {
  const cited = [...markdown.matchAll(/`([^`\n]+)`/g), ...markdown.matchAll(/\]\(([^)\s]+)\)/g)];
  return cited
    .map(([, text]) => PATH.exec(text!)?.[1])
    .filter((path): path is string => path !== undefined && !exists(path));
}

/**
 * Whether `source` declares `name` at its top level: exported (a declaration or an `export { … }` list),
 * or not, as a config file's constant (`LAYERS` in eslint.config.js).
 */
function declaresName(source: string, name: string): boolean {
  const declared = new RegExp(
    String.raw`^(?:export\s+)?(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:async\s+)?(?:class|function\*?|const|let|interface|type|enum)\s+${name}\b`,
    'm',
  );
  const listed = new RegExp(String.raw`^export\s+(?:type\s+)?\{[^}]*\b${name}\b[^}]*\}`, 'm');
  return declared.test(source) || listed.test(source);
}

/** The names a record cites with their file that the file does not declare. */
function missingNames(markdown: string): string[] {
  const missing: string[] = [];
  for (const pattern of NAMED_IN_FILE) {
    for (const { groups } of markdown.matchAll(pattern)) {
      const { path, name } = groups as { path: string; name: string };
      const file = join(ROOT, path);
      if (!existsSync(file) || !statSync(file).isFile()) continue; // reported by missingPaths if cited
      const source = readFileSync(file, 'utf8');
      const [exported, ...members] = name.replace(/\(\)$/, '').split('.');
      const found =
        declaresName(source, exported!) &&
        members.every((m) => new RegExp(String.raw`\b${m}\b`).test(source));
      if (!found) missing.push(`${name} in ${path}`);
    }
  }
  return missing;
}

it('finds the decision records', () => {
  expect(RECORDS).toEqual(expect.arrayContaining(['0013-limiter-modules.md', '0031-import-layers.md']));
});

it('reports a path and a name that do not exist', () => {
  const record = "`src/limits/no-such-file.ts` and `src/limits/rate-limiter.ts`'s `NoSuchLimiter`";
  expect(missingPaths(record)).toEqual(['src/limits/no-such-file.ts']);
  expect(missingNames(record)).toEqual(['NoSuchLimiter in src/limits/rate-limiter.ts']);
  expect(missingNames('`RateLimiter.noSuchMethod()` (`src/limits/rate-limiter.ts`)')).toEqual([
    'RateLimiter.noSuchMethod() in src/limits/rate-limiter.ts',
  ]);
  expect(missingPaths('[a](../../src/usage/*-repository.ts) `sql/*-none.sql`')).toEqual(['sql/*-none.sql']);
  expect(missingPaths('`src/management/resources/<resource>/` `src/<folder>/nothing.ts`')).toEqual([
    'src/<folder>/nothing.ts',
  ]);
  expect(missingNames('**`src/limits/rate-limiter.ts`** (`NoSuchPort`)')).toEqual([
    'NoSuchPort in src/limits/rate-limiter.ts',
  ]);
});

it.each(RECORDS)('%s cites files and names that exist', (record) => {
  const markdown = readFileSync(join(DECISIONS, record), 'utf8');
  expect({ paths: missingPaths(markdown), names: missingNames(markdown) }).toEqual({ paths: [], names: [] });
});

const ARCHITECTURE_NOTES = [
  'docs/architecture.md',
  ...readdirSync(join(ROOT, 'src'), { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(ROOT, 'src', e.name, 'README.md')))
    .map((e) => `src/${e.name}/README.md`),
];

it('finds the architecture notes', () => {
  expect(ARCHITECTURE_NOTES).toEqual(expect.arrayContaining(['src/limits/README.md', 'src/usage/README.md']));
});

it.each(ARCHITECTURE_NOTES)('%s cites files and names that exist', (note) => {
  const markdown = readFileSync(join(ROOT, note), 'utf8');
  expect({ paths: missingPaths(markdown), names: missingNames(markdown) }).toEqual({ paths: [], names: [] });
});
