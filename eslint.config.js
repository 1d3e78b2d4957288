// The lint rules enforce the architecture. Imports in src/ run downward only, through the layers below
// (docs/decisions/0031); tests/unit/architecture.test.ts adds what lint cannot see, import circles. The
// hot path (proxy/, limits/, keys/, usage/, routes/) imports neither Express nor the management API (a layer
// above it), so nothing of the management stack can creep onto it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers of src/, lowest first: a folder (or a file of src/ itself, named without `.ts`) imports only
 * from the layers before its own; names in one layer do not import each other. The composition root
 * (COMPOSITION_ROOT) sits above them all.
 */
const LAYERS = [
  // The proxy's refusals, below errors so that ERRORS can list them (docs/decisions/0140).
  ['refusals'],
  ['plans', 'errors', 'events', 'net', 'web'],
  ['metering'],
  ['ops'],
  ['tracing'],
  ['config'],
  ['redis'],
  ['store'],
  ['keys', 'limits', 'usage', 'credits'],
  ['routes'],
  ['proxy', 'billing', 'webhooks'],
  // Gateways' authorization calls: the proxy's admission behind other protocols.
  ['extauth'],
  ['management'],
  ['console', 'portal'],
];
const COMPOSITION_ROOT = ['main', 'app', 'adapters', 'redis-adapters', 'server'];
const FILES_OF_SRC = new Set(['config', 'errors', 'refusals', ...COMPOSITION_ROOT]);
/** The request path: no Express there. */
const HOT_PATH = new Set(['proxy', 'limits', 'keys', 'usage', 'routes', 'extauth']);
const EXPRESS_FREE = {
  group: ['express', 'express/*'],
  message: 'proxy/, limits/, keys/, usage/, routes/ and extauth/ stay free of Express.',
};

/**
 * Management resources live in src/management/resources/<resource>/ (docs/decisions/0067); one list
 * assembles their operations, and nothing else imports a resource's operations.ts but the tests and
 * files of its own folder.
 */
const OPERATIONS_LIST = 'src/management/resources/index.ts';
const ANOTHER_FOLDERS_OPERATIONS = {
  regex: '^(?!\\./operations\\.js$).*/operations\\.js$',
  message: `A resource's operations are assembled in ${OPERATIONS_LIST} alone: import its schemas or views instead.`,
};

const pathOf = (name) => (FILES_OF_SRC.has(name) ? `src/${name}.ts` : `src/${name}/`);
/** A relative import of `name` (a folder or a file of src/) from anywhere in src/. */
const importOf = (name) => `^(\\./|(\\.\\./)+)${name}${FILES_OF_SRC.has(name) ? '\\.js$' : '/'}`;

function layerRules() {
  return LAYERS.flatMap((layer, level) =>
    layer.flatMap((name) => {
      const forbidden = [
        ...LAYERS.slice(level)
          .flat()
          .filter((other) => other !== name),
        ...COMPOSITION_ROOT,
      ];
      const patterns = forbidden.map((other) => ({
        regex: importOf(other),
        message: `${pathOf(name)} must not import ${pathOf(other)}: ${layer.includes(other) ? 'they share a layer' : 'it is in a higher layer'} (LAYERS in eslint.config.js). Move what both need down a layer.`,
      }));
      if (HOT_PATH.has(name)) patterns.push(EXPRESS_FREE);
      const files = [FILES_OF_SRC.has(name) ? pathOf(name) : `${pathOf(name)}**/*.ts`];
      const rule = (more) => ({ 'no-restricted-imports': ['error', { patterns: [...patterns, ...more] }] });
      if (name !== 'management') return [{ files, rules: rule([]) }];
      return [
        { files, ignores: [OPERATIONS_LIST], rules: rule([ANOTHER_FOLDERS_OPERATIONS]) },
        { files: [OPERATIONS_LIST], rules: rule([]) },
      ];
    }),
  );
}

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'data/**',
      'coverage/**',
      'bench/results/**',
      'packages/*/dist/**',
      'packages/*/src/generated/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        performance: 'readonly',
        setImmediate: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  ...layerRules(),
  {
    // The database is store/'s, and the usage and billing repositories': nobody else speaks SQL.
    files: ['src/**/*.ts'],
    ignores: ['src/store/**/*.ts', 'src/usage/*-repository.ts', 'src/billing/*-repository.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['kysely', 'pg', 'node:sqlite', '@electric-sql/*', 'kysely-*'],
              message: 'Only store/ and the usage/ and billing/ *-repository.ts files talk to the database.',
              allowTypeImports: false,
            },
          ],
        },
      ],
    },
  },
  {
    // PGlite is opened by the upgrade-data-dir command alone, through src/store/pglite.ts: no serving
    // process loads it (docs/decisions/0030). Its imports there are dynamic, which no-restricted-imports
    // does not see.
    files: ['src/**/*.ts'],
    ignores: ['src/store/pglite.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            ':matches(ImportDeclaration, ImportExpression)[source.value=/^(@electric-sql.pglite|kysely-pglite-dialect)$/]',
          message: 'Only src/store/pglite.ts loads PGlite, for the upgrade-data-dir command.',
        },
      ],
    },
  },
  {
    // The console and the portal's pages run in the browser: nothing of Node, and from the server's code
    // only types and the pure modules it shares (plan periods), never the management stack.
    files: ['console/**/*.ts', 'console/**/*.tsx', 'portal/**/*.ts', 'portal/**/*.tsx'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'The console runs in the browser.' },
            {
              group: ['**/src/management/*', '**/src/store/*', '**/src/proxy/*'],
              allowTypeImports: true,
              message: 'The console calls the public API; it imports only its types.',
            },
            {
              group: ['**/packages/client/**'],
              allowTypeImports: true,
              message:
                'The console reads the API types @tollgate/client generates (console/src/api-types.ts), nothing else of it.',
            },
          ],
        },
      ],
    },
  },
  {
    // process.env is read in one place only: main.ts, the composition root.
    files: ['src/**/*.ts'],
    ignores: ['src/main.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Only src/main.ts reads process.env; take a Config.' },
      ],
    },
  },
);
