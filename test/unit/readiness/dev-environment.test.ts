import { describe, expect, it } from 'vitest';
import { devEnvironment } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('dev_environment criterion', () => {
  it('scores 0/2 with neither pinned versions nor an environment', async () => {
    expect(await score(devEnvironment, { 'package.json': pkg({}) })).toEqual({
      numerator: 0,
      denominator: 2,
      rationale: 'no pinned toolchain versions (.tool-versions, .nvmrc, rust-toolchain.toml, ...); no dev container, Nix, Devbox or Compose environment',
    });
  });

  it('gives a point each for pinned versions and a dev container', async () => {
    expect(await score(devEnvironment, { '.nvmrc': '24\n' })).toMatchObject({ numerator: 1 });
    expect(await score(devEnvironment, { 'package.json': pkg({ engines: { node: '>=22' } }) })).toMatchObject({ numerator: 1 });
    expect(await score(devEnvironment, { '.tool-versions': 'nodejs 24.1.0\n', '.devcontainer/devcontainer.json': '{}' })).toEqual({
      numerator: 2,
      denominator: 2,
      rationale: 'toolchain versions pinned in .tool-versions; environment defined in .devcontainer/devcontainer.json',
    });
  });
});
