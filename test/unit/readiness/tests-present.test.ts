import { describe, expect, it } from 'vitest';
import { testsPresent } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('tests_present criterion', () => {
  it("finds tests by the runners' naming conventions", async () => {
    for (const file of ['src/a.test.ts', 'test/a.js', 'a_test.go', 'tests/test_a.py', 'spec/a_spec.rb', 'src/test/java/ATest.java']) {
      expect((await score(testsPresent, { [file]: 'x' })).numerator, file).toBe(1);
    }
  });

  it('does not count documentation or look-alikes', async () => {
    expect(await score(testsPresent, { 'docs/testing.md': 'x', 'src/contest.ts': 'x', 'test/README.md': 'x' })).toEqual({
      numerator: 0,
      denominator: 1,
      rationale: 'no test files found',
    });
  });

  it('scores each workspace member and lists its files', async () => {
    const s = await score(testsPresent, {
      'package.json': pkg({ workspaces: ['packages/*'] }),
      'packages/a/package.json': pkg({}),
      'packages/a/src/x.spec.ts': 'x',
      'packages/a/src/y.spec.ts': 'x',
      'packages/b/package.json': pkg({}),
    });
    expect(s).toEqual({
      numerator: 1,
      denominator: 2,
      rationale: 'packages/a: 2 test files (packages/a/src/x.spec.ts, packages/a/src/y.spec.ts); packages/b: no test files found',
    });
  });
});
