import { describe, expect, it } from 'vitest';
import { testsRunnable } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('tests_runnable criterion', () => {
  it("rejects npm's placeholder test script", async () => {
    expect(await score(testsRunnable, { 'package.json': pkg({ scripts: { test: 'echo "Error: no test specified" && exit 1' } }) })).toEqual({
      numerator: 0,
      denominator: 1,
      rationale: "the `test` script in package.json is npm's placeholder that only fails",
    });
  });

  it('passes a real test script or a make target', async () => {
    expect(await score(testsRunnable, { 'package.json': pkg({ scripts: { test: 'vitest run' } }) })).toMatchObject({
      numerator: 1,
      rationale: '`test` script in package.json: vitest run',
    });
    expect(await score(testsRunnable, { Makefile: 'test:\n\t./run-tests.sh\n' })).toMatchObject({ numerator: 1, rationale: '`test` target in Makefile' });
  });

  it('needs tests for the toolchain runners to find', async () => {
    expect(await score(testsRunnable, { 'go.mod': 'module a\n' })).toMatchObject({ numerator: 0, rationale: 'no tests and no test command' });
    expect(await score(testsRunnable, { 'go.mod': 'module a\n', 'a_test.go': 'package a\n' })).toMatchObject({ numerator: 1 });
    expect(await score(testsRunnable, { 'pyproject.toml': '[project]\n', 'tests/test_a.py': '' })).toMatchObject({
      numerator: 0,
      rationale: 'tests exist but no command runs them',
    });
    expect(await score(testsRunnable, { 'pyproject.toml': '[tool.pytest.ini_options]\n', 'tests/test_a.py': '' })).toMatchObject({ numerator: 1 });
  });
});
