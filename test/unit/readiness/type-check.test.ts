import { describe, expect, it } from 'vitest';
import { typeCheck } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('type_check criterion', () => {
  it('fails plain JavaScript and untyped Python', async () => {
    expect(await score(typeCheck, { 'package.json': pkg({}), 'index.js': '' })).toEqual({
      numerator: 0,
      denominator: 1,
      rationale: 'no type checker configured',
    });
    expect(await score(typeCheck, { 'pyproject.toml': '[project]\nname="a"\n' })).toMatchObject({ numerator: 0 });
  });

  it('passes TypeScript, checkJs and mypy', async () => {
    expect(await score(typeCheck, { 'package.json': pkg({}), 'tsconfig.json': '{}' })).toMatchObject({
      numerator: 1,
      rationale: 'TypeScript configured in tsconfig.json',
    });
    expect(await score(typeCheck, { 'package.json': pkg({}), 'jsconfig.json': '{"compilerOptions":{"checkJs": true}}' })).toMatchObject({ numerator: 1 });
    expect(await score(typeCheck, { 'package.json': pkg({}), 'jsconfig.json': '{}' })).toMatchObject({ numerator: 0 });
    expect(await score(typeCheck, { 'pyproject.toml': '[tool.mypy]\nstrict = true\n' })).toMatchObject({
      numerator: 1,
      rationale: 'type checker configured in [tool.mypy] in pyproject.toml',
    });
  });

  it('counts compiled languages, per workspace member', async () => {
    const s = await score(typeCheck, {
      'go.work': 'go 1.22\n\nuse (\n\t./svc\n\t./tools\n)\n',
      'svc/go.mod': 'module a/svc\n',
      'tools/package.json': pkg({}),
    });
    expect(s).toEqual({
      numerator: 1,
      denominator: 2,
      rationale: 'svc: Go compiler checks types (svc/go.mod); tools: no type checker configured',
    });
  });
});
