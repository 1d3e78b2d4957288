/**
 * The README and everything under docs/ link to files and headings that exist: moving a section into
 * a guide, or renaming a heading, must not leave a reader (or a screenshot) at a dead link.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

function markdownUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownUnder(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

const DOCS = [join(ROOT, 'README.md'), ...markdownUnder(join(ROOT, 'docs'))];

/** The text a reader sees rendered: fenced blocks and inline code hold no links. */
const prose = (markdown: string): string =>
  markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's anchor of each heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Every relative link and image target of a file that does not lead where it says. */
function deadLinks(file: string): string[] {
  const dead: string[] = [];
  for (const [, target] of prose(readFileSync(file, 'utf8')).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target!)) continue; // https:, mailto:: not ours to check
    const [path, anchor] = target!.split('#') as [string, string | undefined];
    const linked = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
    if (!existsSync(linked)) {
      dead.push(`${target} (no such file)`);
    } else if (
      anchor !== undefined &&
      statSync(linked).isFile() &&
      linked.endsWith('.md') &&
      !anchorsOf(readFileSync(linked, 'utf8')).has(anchor)
    ) {
      dead.push(`${target} (no such heading)`);
    }
  }
  return dead;
}

it('finds the README, the guides and the decision records', () => {
  const names = DOCS.map((f) => relative(ROOT, f));
  expect(names).toEqual(
    expect.arrayContaining([
      'README.md',
      'docs/guides/keys.md',
      'docs/guides/operations.md',
      'docs/decisions/0003-usage-storage.md',
    ]),
  );
});

it.each(DOCS.map((f) => [relative(ROOT, f), f]))(
  '%s links only to files and headings that exist',
  (_name, file) => {
    expect(deadLinks(file)).toEqual([]);
  },
);

it('shows the console screenshots the browser tests take', () => {
  const images = readdirSync(join(ROOT, 'docs/images')).filter((f) => f.endsWith('.png'));
  const shown = DOCS.flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(/!\[[^\]]*\]\(([^)]+\.png)\)/g)].map((m) =>
      resolve(dirname(f), m[1]!),
    ),
  );
  expect(images.length).toBeGreaterThan(0);
  expect(images.filter((image) => !shown.includes(join(ROOT, 'docs/images', image)))).toEqual([]);
});
