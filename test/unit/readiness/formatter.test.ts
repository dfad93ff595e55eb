import { describe, expect, it } from 'vitest';
import { formatter } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('formatter criterion', () => {
  it('fails a package without a formatter', async () => {
    expect(await score(formatter, { 'package.json': pkg({}) })).toEqual({ numerator: 0, denominator: 1, rationale: 'no formatter configuration found' });
  });

  it('finds Prettier by file or package.json key', async () => {
    expect(await score(formatter, { 'package.json': pkg({}), '.prettierrc.json': '{}' })).toMatchObject({
      numerator: 1,
      rationale: 'formatter configured in .prettierrc.json',
    });
    expect(await score(formatter, { 'package.json': pkg({ prettier: '@acme/prettier' }) })).toMatchObject({ numerator: 1 });
  });

  it('finds black in pyproject and counts gofmt as built in', async () => {
    expect(await score(formatter, { 'pyproject.toml': '[tool.black]\nline-length = 100\n' })).toMatchObject({
      numerator: 1,
      rationale: 'formatter configured in [tool.black] in pyproject.toml',
    });
    expect(await score(formatter, { 'go.mod': 'module a\n' })).toMatchObject({ numerator: 1, rationale: 'gofmt ships with the toolchain of go.mod' });
  });
});
