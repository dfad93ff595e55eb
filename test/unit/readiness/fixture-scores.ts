import type { Files } from './fixture-repo.ts';
import { pkg } from './fixture-repo.ts';

/**
 * Two fixture repositories with the score of every criterion worked out by hand: a well-kept
 * npm monorepo (one member lacks tests) and a bare script with committed secrets.
 */
export const WELL_KEPT: Files = {
  'package.json': pkg({ private: true, workspaces: ['packages/*'], engines: { node: '>=22' } }),
  'package-lock.json': '{"lockfileVersion":3}',
  'README.md': [
    '# acme',
    '',
    'Acme is the platform that takes orders from the shop, checks stock in the warehouse system and hands paid orders to shipping. ' +
      'This repository holds its HTTP API and its web front end.',
    '',
    '## Development',
    '',
    '```sh',
    'npm ci',
    'npm test',
    '```',
    '',
  ].join('\n'),
  'CONTRIBUTING.md': '# Contributing\n\nOpen a pull request.\n',
  'AGENTS.md': '# Agents\n\nRun `npm test` and `npm run lint` before you commit.\n',
  '.github/CODEOWNERS': '* @acme/core\n',
  '.gitignore': 'node_modules\ndist\n',
  'eslint.config.js': 'export default [];\n',
  '.prettierrc': '{}\n',
  'tsconfig.json': '{"compilerOptions":{"strict":true}}\n',
  '.github/workflows/ci.yml': 'on: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: npm ci\n      - run: npm test\n',
  '.husky/pre-commit': 'npx lint-staged\n',
  '.devcontainer/devcontainer.json': '{"image":"mcr.microsoft.com/devcontainers/typescript-node"}\n',
  '.github/dependabot.yml': 'version: 2\n',
  'packages/api/package.json': pkg({ name: '@acme/api', description: 'HTTP API', scripts: { build: 'tsc', test: 'vitest run' } }),
  'packages/api/src/index.ts': 'export const ok = true;\n',
  'packages/api/src/index.test.ts': 'import { ok } from "./index";\n',
  'packages/web/package.json': pkg({ name: '@acme/web', description: 'Web front end', scripts: { build: 'vite build' } }),
  'packages/web/src/main.ts': 'console.log(1);\n',
};

export const WELL_KEPT_APPS = { 'packages/api': { description: 'HTTP API' }, 'packages/web': { description: 'Web front end' } };

export const WELL_KEPT_SCORES: Record<string, [number, number]> = {
  readme: [2, 2],
  gitignore: [1, 1],
  lockfile: [2, 2],
  build_command: [2, 2],
  tests_present: [1, 2],
  setup_docs: [2, 2],
  agent_instructions: [2, 2],
  code_owners: [1, 1],
  lint_config: [2, 2],
  formatter: [2, 2],
  type_check: [2, 2],
  secrets_hygiene: [1, 1],
  ci_workflows: [2, 2],
  tests_runnable: [1, 2],
  pre_commit_hooks: [1, 1],
  dev_environment: [2, 2],
  dependency_updates: [1, 1],
};
/** Level 1 (4 of 5), 2 (3 of 3) and 3 (4 of 4) pass; level 4 has 2 of 3, under 80%. */
export const WELL_KEPT_LEVEL = 4;

// Built at run time so no secret-shaped string sits in this file.
const AWS_KEY = ['AKIA', 'Q4MZ7RT2KXW9PLNB'].join('');

export const NEGLECTED: Files = {
  'main.py': 'print("hi")\n',
  'config.py': `AWS_ACCESS_KEY_ID = "${AWS_KEY}"\n`,
  '.env': 'DB_PASSWORD=hunter2\n',
};

export const NEGLECTED_SCORES: Record<string, [number, number]> = {
  readme: [0, 2],
  gitignore: [0, 1],
  lockfile: [1, 1],
  build_command: [0, 1],
  tests_present: [0, 1],
  setup_docs: [0, 2],
  agent_instructions: [0, 2],
  code_owners: [0, 1],
  lint_config: [0, 1],
  formatter: [0, 1],
  type_check: [0, 1],
  secrets_hygiene: [0, 1],
  ci_workflows: [0, 2],
  tests_runnable: [0, 1],
  pre_commit_hooks: [0, 1],
  dev_environment: [0, 2],
  dependency_updates: [0, 1],
};

/** `{criterion: [numerator, denominator]}` of a report, for comparing with the tables above. */
export function scoresOf(report: Record<string, { numerator: number; denominator: number }>): Record<string, [number, number]> {
  return Object.fromEntries(Object.entries(report).map(([id, s]) => [id, [s.numerator, s.denominator]]));
}
