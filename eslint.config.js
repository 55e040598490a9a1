import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      '.tmp/',
      'var/',
      'bench/results/',
      'native/*/build/',
      '.pkg-build/',
      'dist-pkg/',
    ],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  // The native addon's CommonJS loader.
  { files: ['native/**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  { files: ['test/**/*.ts', 'bench/**/*.ts'], rules: { '@typescript-eslint/no-non-null-assertion': 'off' } },
  // The browser code types API responses from the server's contract (src/contract, `import type` only).
  { files: ['src/web/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'error' } },
);
