// The lint rules enforce the architecture: the hot path (proxy/, limits/, keys/) never imports
// Express or the management API, so nothing of the management stack can creep onto it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const coreRestriction = {
  patterns: [
    { group: ['express', 'express/*'], message: 'proxy/, limits/ and keys/ stay free of Express.' },
    { group: ['**/management/**', '../management', './management'], message: 'The core must not depend on the management API.' },
  ],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', fetch: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', performance: 'readonly', setImmediate: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['src/proxy/**/*.ts', 'src/limits/**/*.ts', 'src/keys/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', coreRestriction], '@typescript-eslint/no-restricted-imports': 'off' },
  },
  {
    // usage/ runs on the request path (the recorder) too: no Express, no management API.
    files: ['src/usage/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', coreRestriction], '@typescript-eslint/no-restricted-imports': 'off' },
  },
  {
    // The database is store/'s, and the usage repositories': nobody else speaks SQL.
    files: ['src/**/*.ts'],
    ignores: ['src/store/**/*.ts', 'src/usage/*-repository.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [{ group: ['kysely', 'pg', 'node:sqlite', '@electric-sql/*', 'kysely-*'], message: 'Only store/ and the usage/*-repository.ts files talk to the database.', allowTypeImports: false }],
        },
      ],
    },
  },
  {
    // The console runs in the browser: nothing of Node, and from the server's code only types and the
    // pure modules it shares (plan periods), never the management stack.
    files: ['console/**/*.ts', 'console/**/*.tsx'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'The console runs in the browser.' },
            { group: ['**/src/management/*', '**/src/store/*', '**/src/proxy/*'], allowTypeImports: true, message: 'The console calls the public API; it imports only its types.' },
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
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Only src/main.ts reads process.env; take a Config.' }],
    },
  },
);
