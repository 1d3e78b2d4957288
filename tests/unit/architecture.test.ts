/**
 * Imports in src/ run downward only (docs/decisions/0031). Lint refuses an import from a higher layer
 * (LAYERS in eslint.config.js); what it cannot see is a circle, so this walks every import of src/
 * (types and dynamic imports included) and fails on any. It also checks that lint does refuse the
 * upward imports once removed, so that the rules cannot quietly stop applying.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ESLint } from 'eslint';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

/** Every module of src/ and the modules of src/ it imports, as paths relative to the project. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  for (const file of files.map((f) => join(SRC, f))) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const local = importedFiles.map((i) => i.fileName).filter((name) => name.startsWith('.'));
    graph.set(
      relative(ROOT, file),
      local.map((name) => relative(ROOT, resolve(dirname(file), name.replace(/\.js$/, '.ts')))),
    );
  }
  return graph;
}

/** The import circles of `graph`: its strongly connected components of more than one module (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const visit = (module: string) => {
    index.set(module, index.size);
    low.set(module, index.get(module)!);
    stack.push(module);
    for (const next of graph.get(module) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(module, Math.min(low.get(module)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(module, Math.min(low.get(module)!, index.get(next)!));
      }
    }
    if (low.get(module) !== index.get(module)) return;
    const component = stack.splice(stack.indexOf(module));
    if (component.length > 1 || graph.get(module)!.includes(module)) found.push(component.sort());
  };
  for (const module of graph.keys()) if (!index.has(module)) visit(module);
  return found;
}

it('has no import circle in src/', () => {
  const graph = importGraph();
  expect(graph.get('src/keys/key-cache.ts')).toContain('src/store/key-with-plan.ts'); // type imports count
  expect(circles(graph)).toEqual([]);
});

it('finds a circle when there is one', () => {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  expect(circles(graph)).toEqual([['a', 'b', 'c']]);
});

describe('lint refuses an import from a higher layer', () => {
  const eslint = new ESLint({ cwd: ROOT });

  it.each([
    [
      'src/config.ts',
      `import type { UsageHistoryRepository } from './usage/history-repository.js';`,
      'src/usage/',
    ],
    ['src/config.ts', `import type { RateLimiter } from './limits/rate-limiter.js';`, 'src/limits/'],
    ['src/keys/key-cache.ts', `import type { RateLimiter } from '../limits/rate-limiter.js';`, 'src/limits/'],
    [
      'src/redis/shared-auth-throttle.ts',
      `import type { FailureThrottle } from '../proxy/auth-throttle.js';`,
      'src/proxy/',
    ],
    ['src/usage/redis/sink.ts', `import { recordUsage } from '../../proxy/entry.js';`, 'src/proxy/'],
    ['src/store/key-repository.ts', `import type { KeyCache } from '../keys/key-cache.js';`, 'src/keys/'],
    ['src/plans/plan.ts', `import type { Config } from '../config.js';`, 'src/config.ts'],
  ])('%s: %s', async (file, line, target) => {
    const [result] = await eslint.lintText(`${line}\n`, { filePath: join(ROOT, file) });
    const refusals = result!.messages
      .filter((m) => m.ruleId === 'no-restricted-imports')
      .map((m) => m.message);
    expect(refusals).toEqual([expect.stringContaining(`must not import ${target}`)]);
  });
});

describe('lint lets only the list of operations import a resource’s operations', () => {
  const eslint = new ESLint({ cwd: ROOT });
  const refusals = async (file: string, line: string) => {
    const [result] = await eslint.lintText(`${line}\nexport const all = list;\n`, {
      filePath: join(ROOT, file),
    });
    return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };

  it.each([
    [
      'src/management/resources/plans/operations.ts',
      `import { keyOperations as list } from '../keys/operations.js';`,
    ],
    [
      'src/management/openapi.ts',
      `import { planOperations as list } from './resources/plans/operations.js';`,
    ],
  ])('%s: %s is refused', async (file, line) => {
    expect(await refusals(file, line)).toEqual([
      expect.stringContaining('assembled in src/management/resources/index.ts alone'),
    ]);
  });

  it.each([
    ['src/management/resources/index.ts', `import { keyOperations as list } from './keys/operations.js';`],
    [
      'src/management/resources/verify/route.ts',
      `import { verifyOperations as list } from './operations.js';`,
    ],
    ['src/management/app.ts', `import { registerOperations as list } from './register-operations.js';`],
  ])('%s: %s is allowed', async (file, line) => {
    expect(await refusals(file, line)).toEqual([]);
  });
});

it('assembles every resource folder in the one list of operations', () => {
  const resources = join(SRC, 'management/resources');
  const folders = readdirSync(resources, { withFileTypes: true }).filter((entry) => entry.isDirectory());
  const list = readFileSync(join(resources, 'index.ts'), 'utf8');
  for (const folder of folders) expect(list).toContain(`from './${folder.name}/operations.js'`);
});
