import { describe, expect, it } from 'vitest';
import { buildCommand } from '../../../src/modules/readiness/criteria/index.ts';
import { pkg, useFixtureRepos } from './fixture-repo.ts';

const { score } = useFixtureRepos();

describe('build_command criterion', () => {
  it('passes a Node package with a build script and names it', async () => {
    expect(await score(buildCommand, { 'package.json': pkg({ scripts: { build: 'tsc -p .' } }) })).toEqual({
      numerator: 1,
      denominator: 1,
      rationale: '`build` script in package.json: tsc -p .',
    });
  });

  it('fails a Node package without one', async () => {
    const s = await score(buildCommand, { 'package.json': pkg({ scripts: { start: 'node .' } }) });
    expect(s).toMatchObject({ numerator: 0, denominator: 1 });
    expect(s.rationale).toMatch(/^no build command/);
  });

  it('accepts a Makefile build target (not a look-alike) and a Dockerfile', async () => {
    expect(await score(buildCommand, { Makefile: 'all: build\n\nbuild: deps\n\tcc -o app main.c\n' })).toMatchObject({
      numerator: 1,
      rationale: '`build` target in Makefile',
    });
    expect(await score(buildCommand, { Makefile: 'buildx:\n\techo no\n' })).toMatchObject({ numerator: 0 });
    expect(await score(buildCommand, { Dockerfile: 'FROM scratch\n' })).toMatchObject({ numerator: 1, rationale: 'Dockerfile builds the application image' });
  });

  it('counts toolchains that build by themselves, and scores each workspace member', async () => {
    expect(await score(buildCommand, { 'go.mod': 'module example.com/a\n' })).toMatchObject({ numerator: 1 });
    const s = await score(buildCommand, {
      'package.json': pkg({ workspaces: ['apps/*'] }),
      'apps/web/package.json': pkg({ scripts: { build: 'vite build' } }),
      'apps/docs/package.json': pkg({}),
    });
    expect(s.numerator).toBe(1);
    expect(s.denominator).toBe(2);
    expect(s.rationale).toContain('apps/web: `build` script in apps/web/package.json: vite build');
    expect(s.rationale).toContain('apps/docs: no build command');
  });
});
