import { describe, expect, it } from 'vitest';
import { lintConfig } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('lint_config criterion', () => {
  it('fails a package without a linter', async () => {
    expect(await score(lintConfig, { 'package.json': pkg({}) })).toEqual({ numerator: 0, denominator: 1, rationale: 'no linter configuration found' });
  });

  it('finds ESLint, Biome and package.json configuration', async () => {
    expect(await score(lintConfig, { 'package.json': pkg({}), 'eslint.config.mjs': 'export default []' })).toMatchObject({
      numerator: 1,
      rationale: 'linter configured in eslint.config.mjs',
    });
    expect(await score(lintConfig, { 'package.json': pkg({}), 'biome.json': '{}' })).toMatchObject({ numerator: 1 });
    expect(await score(lintConfig, { 'package.json': pkg({ eslintConfig: { root: true } }) })).toMatchObject({
      numerator: 1,
      rationale: 'eslintConfig in package.json',
    });
  });

  it('finds Python tool sections and golangci files', async () => {
    expect(await score(lintConfig, { 'pyproject.toml': '[project]\nname="a"\n\n[tool.ruff.lint]\nselect=["E"]\n' })).toMatchObject({
      numerator: 1,
      rationale: 'linter configured in [tool.ruff] in pyproject.toml',
    });
    expect(await score(lintConfig, { 'go.mod': 'module a\n', '.golangci.yml': 'linters: {}\n' })).toMatchObject({ numerator: 1 });
  });

  it('lets workspace members share the root configuration', async () => {
    expect(
      await score(lintConfig, {
        'package.json': pkg({ workspaces: ['packages/*'] }),
        '.eslintrc.json': '{}',
        'packages/a/package.json': pkg({}),
        'packages/b/package.json': pkg({}),
      }),
    ).toMatchObject({ numerator: 2, denominator: 2 });
  });
});
