import { describe, expect, it } from 'vitest';
import { preCommitHooks } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('pre_commit_hooks criterion', () => {
  it('fails without hooks (a husky folder without hooks does not count)', async () => {
    expect(await score(preCommitHooks, { '.husky/_/.gitignore': '*' })).toMatchObject({ numerator: 0, denominator: 1 });
  });

  it('finds pre-commit, husky and lefthook', async () => {
    expect(await score(preCommitHooks, { '.pre-commit-config.yaml': 'repos: []\n' })).toEqual({
      numerator: 1,
      denominator: 1,
      rationale: 'commit hooks configured in .pre-commit-config.yaml',
    });
    expect(await score(preCommitHooks, { '.husky/pre-commit': 'npx lint-staged\n' })).toMatchObject({ numerator: 1 });
    expect(await score(preCommitHooks, { 'lefthook.yml': 'pre-commit: {}\n' })).toMatchObject({ numerator: 1 });
    expect(await score(preCommitHooks, { 'package.json': pkg({ 'lint-staged': { '*.ts': 'eslint' } }) })).toMatchObject({
      numerator: 1,
      rationale: 'commit hooks configured through "lint-staged" in package.json',
    });
  });
});
