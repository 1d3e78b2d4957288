/**
 * The scope table of docs/guides/admin-tokens-and-audit.md is written by hand, for readers: it must
 * name every scope an admin token can hold (src/management/scopes.ts) and nothing else, so a scope
 * added for a new operation fails here until the guide says what it lets a token do.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { OPERATIONS } from '../../src/management/resources/index.js';
import { SCOPES, type Scope } from '../../src/management/scopes.js';

const GUIDE = resolve(import.meta.dirname, '../../docs/guides/admin-tokens-and-audit.md');

/** Scopes no operation requires: they widen what an answer shows instead of allowing a call. */
const ANSWER_SCOPES: ReadonlySet<Scope> = new Set(['keys:secrets']);

/** The scopes each row of the table under "## Scopes" names in its first column, row by row. */
function scopeRows(): string[][] {
  const section = /^## Scopes\n([\s\S]*?)(?=^## )/m.exec(readFileSync(GUIDE, 'utf8'))?.[1];
  if (section === undefined) throw new Error('admin-tokens-and-audit.md has no "## Scopes" section');
  return section
    .split('\n')
    .filter((line) => /^\| `/.test(line))
    .map((line) => [...line.split('|')[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}

describe('the scope table of admin-tokens-and-audit.md', () => {
  const named = scopeRows().flat();

  it('names every scope a token can hold, once each, and no other', () => {
    expect(named.length).toBe(new Set(named).size);
    expect([...named].sort()).toEqual([...SCOPES].sort());
  });

  it('names the scope of every management operation', () => {
    // An operation without a scope (whoami) answers any valid token.
    const needed = new Set(OPERATIONS.flatMap((operation) => operation.scope ?? []));
    expect([...needed].filter((scope) => !named.includes(scope))).toEqual([]);
  });

  it('lists no scope that no operation needs, but those that widen answers', () => {
    const needed = new Set<string>(OPERATIONS.flatMap((operation) => operation.scope ?? []));
    expect(SCOPES.filter((scope) => !needed.has(scope))).toEqual([...ANSWER_SCOPES]);
  });
});
