import { describe, expect, it } from 'vitest';
import { dependencyUpdates } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('dependency_updates criterion', () => {
  it('fails without Dependabot or Renovate', async () => {
    expect(await score(dependencyUpdates, { 'package.json': pkg({}) })).toEqual({
      numerator: 0,
      denominator: 1,
      rationale: 'No Dependabot or Renovate configuration',
    });
  });

  it('finds Dependabot and Renovate', async () => {
    expect(await score(dependencyUpdates, { '.github/dependabot.yml': 'version: 2\n' })).toEqual({
      numerator: 1,
      denominator: 1,
      rationale: 'dependency updates automated by Dependabot (.github/dependabot.yml)',
    });
    expect(await score(dependencyUpdates, { 'renovate.json': '{}' })).toMatchObject({ numerator: 1 });
    expect(await score(dependencyUpdates, { 'package.json': pkg({ renovate: { extends: ['config:base'] } }) })).toMatchObject({ numerator: 1 });
  });
});
