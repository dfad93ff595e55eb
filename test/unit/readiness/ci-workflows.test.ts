import { describe, expect, it } from 'vitest';
import { ciWorkflows } from '../../../src/modules/readiness/criteria/index.ts';
import { useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('ci_workflows criterion', () => {
  it('scores 0/2 without CI', async () => {
    expect(await score(ciWorkflows, { '.github/ISSUE_TEMPLATE.md': 'x' })).toMatchObject({ numerator: 0, denominator: 2 });
  });

  it('scores 1/2 for CI that runs no tests', async () => {
    expect(await score(ciWorkflows, { '.github/workflows/release.yml': 'on: push\njobs:\n  r:\n    steps:\n      - run: npm publish\n' })).toEqual({
      numerator: 1,
      denominator: 2,
      rationale: 'CI configured in .github/workflows/release.yml, but no step runs tests',
    });
  });

  it('scores 2/2 and quotes the step that runs tests', async () => {
    expect(
      await score(ciWorkflows, { '.github/workflows/ci.yml': 'on: [push]\njobs:\n  t:\n    steps:\n      - run: npm ci\n      - run: npm test\n' }),
    ).toEqual({
      numerator: 2,
      denominator: 2,
      rationale: '.github/workflows/ci.yml runs tests: `- run: npm test`',
    });
    expect(await score(ciWorkflows, { '.gitlab-ci.yml': 'test:\n  script:\n    - pytest -q\n' })).toMatchObject({ numerator: 2 });
  });
});
