import { describe, expect, it } from 'vitest';
import { gitignore } from '../../../src/modules/readiness/criteria/index.ts';
import { useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('gitignore criterion', () => {
  it('fails without a root .gitignore', async () => {
    expect(await score(gitignore, { 'src/.gitignore': 'dist\n' })).toEqual({ numerator: 0, denominator: 1, rationale: 'No .gitignore at the repository root' });
  });

  it('fails for a .gitignore of comments only', async () => {
    expect(await score(gitignore, { '.gitignore': '# nothing yet\n\n' })).toMatchObject({ numerator: 0, rationale: '.gitignore exists but holds no rules' });
  });

  it('passes and counts the rules', async () => {
    expect(await score(gitignore, { '.gitignore': 'node_modules\n# build\ndist\n' })).toEqual({
      numerator: 1,
      denominator: 1,
      rationale: '.gitignore at the root with 2 rules',
    });
  });
});
