// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/', 'node_modules/', 'bench/results/', 'chaos/results/', 'coverage/', 'test-output/'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `_`-prefixed names mark what a signature or a destructuring must name but does not use.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // The sample app's page runs in the browser, as a module, with no build step.
    files: ['sample-app/public/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: { document: 'readonly', fetch: 'readonly', localStorage: 'readonly', setInterval: 'readonly' },
    },
  },
  {
    // Prettier wraps code at 120 columns but not strings or comments: the library's messages wrap too.
    files: ['lib/**/*.ts'],
    rules: { 'max-len': ['error', { code: 120, ignoreUrls: true }] },
  },
);
